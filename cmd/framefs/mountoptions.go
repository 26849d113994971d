package main

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// mountOptions are the options of `framefs mount`. Each field is a flag
// (--NAME VALUE) and a mount option (-o NAME=VALUE, "_" for "-", as
// /etc/fstab and mount -t fuse.framefs pass them), and the command's help
// lists them from here: an option is added by adding a field. Its tags:
//
//	flag     the flag's name
//	option   the -o name, where it is not the flag's name with "_" for "-"
//	default  the default as typed on the command line (none: zero)
//	range    "positive" or "non-negative", for numbers, sizes and
//	         durations (sizes are "non-negative" unless it says otherwise)
//	help     what it does, for --help
//
// Zero means zero where the help says what it does (--cache-bytes 0 keeps
// no image); an option whose zero stands for its default is "positive",
// so that 0 given explicitly is refused instead (see checkFlags).
type mountOptions struct {
	// ReadOnly mounts without write directories (TABLE/ingest/,
	// TABLE/replace/) and with the kernel's ro. Default: read-write.
	ReadOnly bool `flag:"read-only" option:"ro" help:"mount read-only: no write directories (TABLE/ingest/, TABLE/replace/)"`
	// AllowOther lets users other than the mounting one read the mount
	// (FUSE's allow_other). Default: the mounting user only.
	AllowOther bool `flag:"allow-other" help:"let other users read the mount (without root, /etc/fuse.conf must have user_allow_other)"`
	// ImageFormat serves frames as jpg, png, bmp, ppm or npy. Default:
	// each table's own format.
	ImageFormat string `flag:"image-format" help:"serve frames as jpg, png, bmp, ppm or npy (default: the table's setting)"`
	// JPEGQuality is the quality of JPEG frames, 1-100. Default: each
	// table's own.
	JPEGQuality int `flag:"jpeg-quality" range:"positive" help:"JPEG quality 1-100 (default: the table's setting)"`
	// Scale resizes every frame to WxH; W or H 0 keeps the aspect ratio.
	// Default: the video's display size.
	Scale string `flag:"scale" help:"resize frames to WxH (e.g. 224x224; W or H 0 keeps the aspect ratio)"`
	// CacheBytes bounds the image cache: frames made but not served yet
	// (docs/CACHES.md). Default 256 MiB; 0 keeps none.
	CacheBytes byteSize `flag:"cache-bytes" default:"256MiB" help:"memory for images made but not served yet (0: none)"`
	// PictureCacheBytes bounds the decoded pictures kept for random
	// readers. Default 256 MiB; 0 keeps none.
	PictureCacheBytes byteSize `flag:"picture-cache-bytes" default:"256MiB" help:"memory for decoded pictures kept for random readers (0: none)"`
	// CacheDir is the disk tier: a local directory keeping every frame
	// made, shared by mounts and kept across remounts. Default: none.
	CacheDir string `flag:"cache-dir" help:"local directory keeping encoded frames on disk, shared by mounts and kept across remounts (default: none)"`
	// CacheDirBytes bounds CacheDir. Default 10 GiB, diskcache's.
	CacheDirBytes byteSize `flag:"cache-dir-bytes" default:"10GiB" range:"positive" help:"size limit of --cache-dir"`
	// SpillDir keeps the frames made for requests to come that the image
	// cache cannot hold until they are asked for (serving/spill.go), when
	// there is no CacheDir. Default: $XDG_CACHE_HOME/framefs/spill, else
	// ~/.cache/framefs/spill; "off" keeps none.
	SpillDir string `flag:"spill-dir" help:"local directory keeping the frames made ahead that --cache-bytes cannot hold until they are read (default $XDG_CACHE_HOME/framefs/spill or ~/.cache/framefs/spill; \"off\" disables; unused with --cache-dir)"`
	// SpillDirBytes bounds SpillDir. Default 10 GiB.
	SpillDirBytes byteSize `flag:"spill-dir-bytes" default:"10GiB" range:"positive" help:"size limit of --spill-dir"`
	// MaxSessions bounds the decoder sessions open at once. Default: 2
	// per core.
	MaxSessions int `flag:"max-sessions" range:"positive" help:"decoder sessions open at once (default 2 x cores)"`
	// Refresh is how often the tables' snapshots and tags are re-read.
	// Default 2 s.
	Refresh time.Duration `flag:"refresh" default:"2s" range:"positive" help:"how often new snapshots and tags are looked for"`
	// StagingDir holds what is dropped into the write directories until
	// it commits; it must be on a local disk. Default:
	// $XDG_CACHE_HOME/framefs/staging, else ~/.cache/framefs/staging.
	StagingDir string `flag:"staging-dir" help:"local directory holding files dropped into ingest/ and replace/ until they commit (default $XDG_CACHE_HOME/framefs/staging or ~/.cache/framefs/staging)"`
	// Settle is how long a dropped file stays closed and unchanged before
	// it commits. Default 2 s.
	Settle time.Duration `flag:"settle" default:"2s" range:"positive" help:"how long a dropped file must stay closed and unchanged before it commits"`
	// StagingLimit bounds what each write directory holds; writes past
	// it fail with ENOSPC. Default 0: no limit but the disk's.
	StagingLimit byteSize `flag:"staging-limit" help:"what each write directory may hold before writes fail with ENOSPC (0: no limit but the disk)"`
	// MetricsAddr serves the metrics .stats shows over HTTP, at
	// http://MetricsAddr/metrics, until the mount is unmounted. Default:
	// off.
	MetricsAddr string `flag:"metrics-addr" help:"also serve the metrics of .stats at http://HOST:PORT/metrics, for Prometheus (default: off)"`
}

// optionField is a field of mountOptions and the names it goes by.
type optionField struct {
	reflect.StructField
	flag, option string
}

// mountOptionFields lists the fields of mountOptions in order.
func mountOptionFields() []optionField {
	t := reflect.TypeFor[mountOptions]()
	fields := make([]optionField, t.NumField())
	for i := range fields {
		sf := t.Field(i)
		f := optionField{StructField: sf, flag: sf.Tag.Get("flag"), option: sf.Tag.Get("option")}
		if f.flag == "" || sf.Tag.Get("help") == "" {
			panic(fmt.Sprintf("mountOptions.%s needs flag and help tags", sf.Name)) // a field added without them
		}
		if f.option == "" {
			f.option = strings.ReplaceAll(f.flag, "-", "_")
		}
		fields[i] = f
	}
	return fields
}

// bind makes a flag of every option, holding its default, that parsing
// sets in o.
func (o *mountOptions) bind(fl *pflag.FlagSet) {
	v := reflect.ValueOf(o).Elem()
	for _, f := range mountOptionFields() {
		help := f.Tag.Get("help")
		switch p := v.FieldByIndex(f.Index).Addr().Interface().(type) {
		case *bool:
			fl.BoolVar(p, f.flag, false, help)
		case *string:
			fl.StringVar(p, f.flag, "", help)
		case *int:
			fl.IntVar(p, f.flag, 0, help)
		case *time.Duration:
			fl.DurationVar(p, f.flag, 0, help)
		case *byteSize:
			fl.Var(p, f.flag, help)
		default:
			panic(fmt.Sprintf("mountOptions.%s: no flag for a %s", f.Name, f.Type))
		}
		flag := fl.Lookup(f.flag)
		if def := f.Tag.Get("default"); def != "" {
			if err := flag.Value.Set(def); err != nil {
				panic(fmt.Sprintf("mountOptions.%s: default %q: %v", f.Name, def, err))
			}
			flag.DefValue = flag.Value.String()
		}
		r := f.Tag.Get("range")
		if _, size := flag.Value.(*byteSize); size && r == "" {
			r = "non-negative"
		}
		if r != "" {
			setRange(fl, r, []string{f.flag})
		}
	}
}

// genericMountOptions are mount(8)'s own options, which mount.fuse3 and
// /etc/fstab pass along: handled by mount(8), or meaningless here.
var genericMountOptions = map[string]bool{
	"rw": true, "defaults": true, "auto": true, "noauto": true, "user": true, "nouser": true, "users": true,
	"nofail": true, "_netdev": true, "exec": true, "noexec": true, "suid": true, "nosuid": true,
	"dev": true, "nodev": true, "atime": true, "noatime": true, "relatime": true,
}

// applyMountOptions sets the options of -o through their flags, so that
// they are parsed and checked as the flags are; they are applied after
// the flags, so they win. An option alone (ro, allow_other) is true.
func applyMountOptions(fl *pflag.FlagSet, options string) error {
	flagOf := map[string]string{}
	for _, f := range mountOptionFields() {
		flagOf[f.option] = f.flag
	}
	for _, opt := range strings.Split(options, ",") {
		key, value, hasValue := strings.Cut(strings.TrimSpace(opt), "=")
		if key == "" || genericMountOptions[key] {
			continue
		}
		name, ok := flagOf[key]
		if !ok {
			return fmt.Errorf("unknown mount option %q (framefs mount --help lists them)", key)
		}
		if !hasValue {
			if value = fl.Lookup(name).NoOptDefVal; value == "" {
				return fmt.Errorf("mount option %s needs a value: -o %s=VALUE", key, key)
			}
		}
		if err := fl.Set(name, value); err != nil {
			return fmt.Errorf("-o %s=%q: %v", key, value, err)
		}
	}
	if err := checkFlags(fl); err != nil {
		return fmt.Errorf("-o %s: %w", options, err)
	}
	return nil
}

// mountOptionsHelp explains how options are given and lists their -o
// names, for the command's long help (the flags list says what each does).
func mountOptionsHelp() string {
	var names []string
	for _, f := range mountOptionFields() {
		if f.Type.Kind() == reflect.Bool {
			names = append(names, f.option)
		} else {
			names = append(names, f.option+"=")
		}
	}
	return `Every option is a flag and a mount option: --cache-bytes 64MiB on the
command line is -o cache_bytes=64MiB in /etc/fstab or with mount -t
fuse.framefs (-o takes a comma-separated list, which wins over the
flags; mount(8)'s generic options, such as rw, defaults or nofail, are
accepted and ignored). Sizes are a byte count or a number with a unit:
64MiB or 1.5GiB count in 1024s, 2G or 64kB in 1000s.

Mount options: ` + wrap(strings.Join(names, ", ")+".", 72-len("Mount options: "), 72)
}

// wrap breaks text at spaces into lines of at most width characters, the
// first at most first.
func wrap(text string, first, width int) string {
	var b strings.Builder
	line, room := 0, first
	for i, word := range strings.Fields(text) {
		if i > 0 && line+1+len(word) > room {
			b.WriteByte('\n')
			line, room = 0, width
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
