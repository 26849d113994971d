package main

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/framefs/framefs/cache/diskcache"
)

// parseMount parses a mount command line's flags and -o options as the
// mount command does, and returns the options they give.
func parseMount(args ...string) (mountOptions, error) {
	var f mountFlags
	fl := pflag.NewFlagSet("mount", pflag.ContinueOnError)
	f.register(fl)
	if err := fl.Parse(args); err != nil {
		return f.mountOptions, err
	}
	if err := checkFlags(fl); err != nil {
		return f.mountOptions, err
	}
	err := applyMountOptions(fl, f.options)
	return f.mountOptions, err
}

// testValue is a value of each option type that no option has as its
// default: the flag's and -o's text for it, and the value it parses to.
func testValue(t *testing.T, typ reflect.Type) (text string, want any) {
	switch typ {
	case reflect.TypeFor[bool]():
		return "true", true
	case reflect.TypeFor[string]():
		return "given-value", "given-value"
	case reflect.TypeFor[int]():
		return "7", 7
	case reflect.TypeFor[time.Duration]():
		return "3500ms", 3500 * time.Millisecond
	case reflect.TypeFor[byteSize]():
		return "3MiB", byteSize(3 << 20)
	}
	t.Fatalf("no test value for an option of type %s: add one", typ)
	return "", nil
}

// TestMountOptionBothWays: every field of mountOptions is settable as a
// flag and as an -o option, with the same result, and the result is the
// value given (not the default).
func TestMountOptionBothWays(t *testing.T) {
	defaults, err := parseMount()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mountOptionFields() {
		text, want := testValue(t, f.Type)
		flagArgs := []string{"--" + f.flag + "=" + text}
		opt := f.option + "=" + text
		if f.Type.Kind() == reflect.Bool {
			flagArgs, opt = []string{"--" + f.flag}, f.option
		}
		byFlag, err := parseMount(flagArgs...)
		if err != nil {
			t.Errorf("%s: %v", flagArgs, err)
			continue
		}
		byOption, err := parseMount("-o", "nofail,"+opt)
		if err != nil {
			t.Errorf("-o %s: %v", opt, err)
			continue
		}
		if !reflect.DeepEqual(byFlag, byOption) {
			t.Errorf("%s gives %+v, -o %s gives %+v", flagArgs, byFlag, opt, byOption)
		}
		got := reflect.ValueOf(byFlag).FieldByIndex(f.Index).Interface()
		if got != want {
			t.Errorf("%s: %s is %v, want %v", flagArgs, f.Name, got, want)
		}
		// Every other field keeps its default.
		reflect.ValueOf(&byFlag).Elem().FieldByIndex(f.Index).Set(reflect.ValueOf(&defaults).Elem().FieldByIndex(f.Index))
		if byFlag != defaults {
			t.Errorf("%s changed other options: %+v, defaults %+v", flagArgs, byFlag, defaults)
		}
	}
	// -o is applied over the flags.
	if o, err := parseMount("--cache-bytes", "1GiB", "-o", "cache_bytes=2GiB"); err != nil || o.CacheBytes != 2<<30 {
		t.Errorf("--cache-bytes 1GiB -o cache_bytes=2GiB: %v, %v", o.CacheBytes, err)
	}
	if defaults.CacheDirBytes != diskcache.DefaultMaxBytes {
		t.Errorf("--cache-dir-bytes defaults to %d, the disk cache's default is %d", defaults.CacheDirBytes, int64(diskcache.DefaultMaxBytes))
	}
}

// TestMountHelpListsOptions: `framefs mount --help` names every option as
// a flag, with its help, and by its -o name, and shows sizes with units.
func TestMountHelpListsOptions(t *testing.T) {
	help := mustRunString(t, "mount", "--help")
	_, list, ok := strings.Cut(help, "Mount options: ")
	if !ok {
		t.Fatalf("no list of mount options in:\n%s", help)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	listed := strings.Fields(strings.NewReplacer(",", " ", ".", " ").Replace(list))
	for _, f := range mountOptionFields() {
		name := f.option
		if f.Type.Kind() != reflect.Bool {
			name += "="
		}
		if !contains(listed, name) {
			t.Errorf("the list of mount options lacks %s: %q", name, list)
		}
		if !strings.Contains(help, "--"+f.flag+" ") || !strings.Contains(help, f.Tag.Get("help")) {
			t.Errorf("help lacks --%s and its text %q", f.flag, f.Tag.Get("help"))
		}
	}
	for _, want := range []string{"--cache-bytes size", "(default 256 MiB)", "(default 10 GiB)", "(default 2s)"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSizeUnits: sizes are taken as people type them, as flags and in -o
// alike; negative, too large and unreadable sizes are refused with an
// error naming the option and the value; zero stays zero where it means
// none, and is refused where the option's zero would mean its default.
func TestSizeUnits(t *testing.T) {
	for _, c := range []struct {
		text string
		want int64
		err  string // in the error of both the flag and -o
		// shown is how the error shows the value, if not as typed
		// (a range check shows it as sizes print).
		shown string
	}{
		{text: "0", want: 0},
		{text: "268435456", want: 256 << 20},
		{text: "64MiB", want: 64 << 20},
		{text: "64mib", want: 64 << 20},
		{text: "64Mi", want: 64 << 20},
		{text: "1.5GiB", want: 3 << 29},
		{text: "2G", want: 2e9},
		{text: "2GB", want: 2e9},
		{text: "512k", want: 512e3},
		{text: "4KiB", want: 4096},
		{text: "1TiB", want: 1 << 40},
		{text: "8EiB", err: "too large"},
		{text: "9223372036854775807", want: math.MaxInt64},
		{text: "9223372036854775808", err: "too large"},
		{text: "99999999999999999999999", err: "too large"},
		{text: "-1", err: "--cache-bytes -1: want 0 or more"},
		{text: "-64MiB", err: "--cache-bytes -64 MiB: want 0 or more", shown: "-64 MiB"},
		{text: "lots", err: "not a size"},
		{text: "64 parsecs", err: "not a size"},
		{text: "0x10", err: "not a size"},
		{text: "1e9", err: "not a size"},
		{text: "MiB", err: "not a size"},
		{text: "", err: "not a size"},
	} {
		if c.shown == "" {
			c.shown = c.text
		}
		for _, args := range [][]string{{"--cache-bytes", c.text}, {"-o", "cache_bytes=" + c.text}} {
			o, err := parseMount(args...)
			switch {
			case c.err == "" && (err != nil || int64(o.CacheBytes) != c.want):
				t.Errorf("%q: %d, %v; want %d", args, o.CacheBytes, err, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "cache-bytes") ||
				!strings.Contains(err.Error(), c.shown)):
				t.Errorf("%q: %v; want an error naming the option and the value, with %q", args, err, c.err)
			}
		}
	}
	// Zero keeps its meaning: none for the caches and the staging limit;
	// for the disk tier's size it would be the default, so it is refused.
	for _, args := range [][]string{{"--cache-bytes", "0"}, {"--picture-cache-bytes", "0"}, {"--staging-limit", "0"}, {"-o", "staging_limit=0"}} {
		if _, err := parseMount(args...); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	if _, err := parseMount("-o", "cache_dir_bytes=0"); err == nil || !strings.Contains(err.Error(), "--cache-dir-bytes 0: want a value above 0") {
		t.Errorf("-o cache_dir_bytes=0: %v", err)
	}
	// The global --s3-cache-bytes takes units too.
	if _, err := runCLI(context.Background(), "ls", t.TempDir(), "--s3-cache-bytes", "lots"); err == nil || !strings.Contains(err.Error(), "s3-cache-bytes") {
		t.Errorf("--s3-cache-bytes lots: %v", err)
	}
}

// TestSizePrintsBack: a size prints with a unit where that is exact, and
// what it prints parses back to it.
func TestSizePrintsBack(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 1000: "1000", 1 << 30: "1 GiB", 256 << 20: "256 MiB", 3 << 29: "1.5 GiB", 2e9: "2 GB",
		123456789: "123456789", -(64 << 20): "-64 MiB", math.MaxInt64: "9223372036854775807",
	} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
	for _, n := range []int64{1023, 1024, 1025, 999999, 1e6, 1 << 40, 5e12 + 1, 7 << 50, math.MaxInt64, math.MinInt64 + 1} {
		if back, err := parseSize(formatSize(n)); err != nil || back != n {
			t.Errorf("formatSize(%d) = %q parses back to %d, %v", n, formatSize(n), back, err)
		}
	}
}
