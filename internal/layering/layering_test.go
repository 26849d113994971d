package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	module = "github.com/framefs/framefs"
	astiav = "github.com/asticode/go-astiav"
	gofuse = "github.com/hanwen/go-fuse"
)

// pkg is one package of the build as `go list -deps` reports it.
type pkg struct {
	imports  []string
	cgoFiles int
	inModule bool
}

// graph is the import graph of the module's packages and everything they
// depend on (test files excluded), keyed by import path.
type graph map[string]pkg

// loadGraph runs `go list -deps` with args (./... when none) in the
// module's root, with the test's environment (GOFLAGS, CGO_ENABLED, GOOS,
// ...), so the graph is the one the build being tested uses.
func loadGraph(t *testing.T, args ...string) graph {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (go test puts it there): %v", err)
	}
	gomod, err := exec.Command(goCmd, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	if len(args) == 0 {
		args = []string{"./..."}
	}
	cmd := exec.Command(goCmd, append([]string{"list", "-deps", "-f", "{{.ImportPath}}\t{{.Module}}\t{{len .CgoFiles}}\t{{join .Imports \",\"}}"}, args...)...)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	g := graph{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 4)
		if len(f) != 4 {
			t.Fatalf("go list printed %q", sc.Text())
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("go list printed %q", sc.Text())
		}
		// Test variants are named "PATH [PATH.test]": the imports are
		// joined by commas, which no import path holds.
		var imports []string
		if f[3] != "" {
			imports = strings.Split(f[3], ",")
		}
		g[f[0]] = pkg{imports: imports, cgoFiles: n, inModule: f[1] == module}
	}
	if len(g) == 0 {
		t.Fatalf("go list -deps %s listed no packages", strings.Join(args, " "))
	}
	return g
}

// within reports whether path is prefix or a package under it.
func within(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// chain returns the shortest import chain from `from` to a package within
// one of forbidden, or nil if there is none.
func (g graph) chain(from string, forbidden ...string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != from && slices.ContainsFunc(forbidden, func(f string) bool { return within(p, f) }) {
			var c []string
			for ; p != ""; p = prev[p] {
				c = append(c, p)
			}
			slices.Reverse(c)
			return c
		}
		for _, q := range g[p].imports {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// modulePackages returns the module's packages that match, sorted.
func (g graph) modulePackages(match func(rel string) bool) []string {
	var ps []string
	for path, p := range g {
		if !p.inModule {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if match(rel) {
			ps = append(ps, path)
		}
	}
	slices.Sort(ps)
	return ps
}

// isDomain reports whether a package (path relative to the module) holds
// the table format, ingest, indexing, caching, frame serving policy or the
// plain media values: code that must build and run without FFmpeg or FUSE.
func isDomain(rel string) bool {
	for _, root := range []string{"table", "query", "ingest", "videoidx", "cache", "media", "serving"} {
		if within(rel, root) {
			return true
		}
	}
	return slices.Contains(strings.Split(rel, "/"), "lerobot")
}

// isModel reports whether a package (path relative to the module) is the
// mount model: what a snapshot's folders hold, as plain values.
func isModel(rel string) bool { return within(rel, "mounttree") }

// rule is a set of packages and the packages none of them may reach.
type rule struct {
	name      string
	packages  func(rel string) bool
	must      []string // packages of the module that must exist, so a rename cannot empty the rule
	forbidden []string
}

var rules = []rule{
	{
		name:      "domain packages build without FFmpeg and FUSE",
		packages:  isDomain,
		must:      []string{"table", "table/storage", "table/input", "query", "query/filter", "ingest", "videoidx", "cache", "media", "serving"},
		forbidden: []string{astiav, gofuse, module + "/decoder", module + "/fusefs"},
	},
	{
		name:      "the mount model builds without FFmpeg, the decoder and FUSE",
		packages:  isModel,
		must:      []string{"mounttree"},
		forbidden: []string{astiav, gofuse, module + "/decoder", module + "/fusefs"},
	},
	{
		name:      "the decoder is a codec under the frame server, not above it",
		packages:  func(rel string) bool { return within(rel, "decoder") },
		must:      []string{"decoder"},
		forbidden: []string{module + "/serving", module + "/fusefs", module + "/table", module + "/query", module + "/ingest"},
	},
	{
		// The format and its commits sit below the selection of rows:
		// views are stored by table, their filters checked by query.
		name:      "the table format does not know the query engine",
		packages:  func(rel string) bool { return within(rel, "table") },
		must:      []string{"table", "table/storage", "table/input"},
		forbidden: []string{module + "/query"},
	},
	{
		name:      "caches know nothing of what they hold",
		packages:  func(rel string) bool { return within(rel, "cache") },
		must:      []string{"cache", "cache/diskcache", "cache/blockcache"},
		forbidden: []string{module + "/table", module + "/query", module + "/videoidx", module + "/media", module + "/lerobot", module + "/ingest"},
	},
	{
		name:      "fusefs reaches FFmpeg only through mounttree's FrameServer interface",
		packages:  func(rel string) bool { return rel == "fusefs" },
		must:      []string{"fusefs"},
		forbidden: []string{astiav, module + "/decoder"},
	},
}

// violations checks the rules on g and returns one message per package
// that breaks one, naming the import chain.
func violations(g graph) []string {
	var msgs []string
	for _, r := range rules {
		ps := g.modulePackages(r.packages)
		for _, m := range r.must {
			if !slices.Contains(ps, module+"/"+m) {
				msgs = append(msgs, fmt.Sprintf("%s: package %s/%s is missing from go list ./... (renamed? update the rule)", r.name, module, m))
			}
		}
		for _, p := range ps {
			if c := g.chain(p, r.forbidden...); c != nil {
				msgs = append(msgs, fmt.Sprintf("%s: %s depends on %s through\n\t%s", r.name, p, c[len(c)-1], strings.Join(c, "\n\t-> ")))
			}
		}
	}
	for _, p := range g.modulePackages(func(string) bool { return true }) {
		if g[p].cgoFiles > 0 && !within(p, module+"/decoder") && p != module+"/cmd/framefs" {
			msgs = append(msgs, fmt.Sprintf("cgo lives in decoder and the command only: %s has %d cgo files", p, g[p].cgoFiles))
		}
		for _, imp := range g[p].imports {
			if within(imp, gofuse) && p != module+"/fusefs" {
				msgs = append(msgs, fmt.Sprintf("fusefs is the only package that imports go-fuse: %s imports %s", p, imp))
			}
		}
	}
	return msgs
}

// TestLayering fails for every package that depends on what its layer
// must not, with the import chain to it.
func TestLayering(t *testing.T) {
	for _, msg := range violations(loadGraph(t)) {
		t.Error(msg)
	}
}

// TestTreeTestsWithoutFFmpeg: the in-process tests of the FUSE tree
// (fusefs/inprocess), test files included, build without the decoder, so
// they run where FFmpeg is not installed.
func TestTreeTestsWithoutFFmpeg(t *testing.T) {
	g := loadGraph(t, "-test", "./fusefs/inprocess")
	root := module + "/fusefs/inprocess.test"
	if _, ok := g[root]; !ok {
		t.Fatalf("go list -test -deps ./fusefs/inprocess did not list %s (no tests left there?)", root)
	}
	if c := g.chain(root, astiav, module+"/decoder"); c != nil {
		t.Errorf("the in-process tests of the FUSE tree depend on %s through\n\t%s", c[len(c)-1], strings.Join(c, "\n\t-> "))
	}
}

// TestModelTestsWithoutFUSE: the mount model's tests, test files
// included, build without go-fuse and the decoder: the model is tested as
// plain values, not through a mount.
func TestModelTestsWithoutFUSE(t *testing.T) {
	g := loadGraph(t, "-test", "./mounttree")
	root := module + "/mounttree.test"
	if _, ok := g[root]; !ok {
		t.Fatalf("go list -test -deps ./mounttree did not list %s (no tests left there?)", root)
	}
	if c := g.chain(root, astiav, gofuse, module+"/decoder", module+"/fusefs"); c != nil {
		t.Errorf("the mount model's tests depend on %s through\n\t%s", c[len(c)-1], strings.Join(c, "\n\t-> "))
	}
}

// TestServingTestsWithoutFFmpeg: the tests of the frame serving policy
// (package serving), test files included, build without the decoder: they
// run against a codec that counts its work, with CGO_ENABLED=0.
func TestServingTestsWithoutFFmpeg(t *testing.T) {
	g := loadGraph(t, "-test", "./serving")
	root := module + "/serving.test"
	if _, ok := g[root]; !ok {
		t.Fatalf("go list -test -deps ./serving did not list %s (no tests left there?)", root)
	}
	if c := g.chain(root, astiav, module+"/decoder"); c != nil {
		t.Errorf("the tests of the frame server depend on %s through\n\t%s", c[len(c)-1], strings.Join(c, "\n\t-> "))
	}
}

// TestViolationsReported checks the rules on a made-up graph in which
// every rule is broken, so that a checker gone blind cannot pass.
func TestViolationsReported(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	g := graph{
		m("table"):            {imports: []string{m("table/storage"), "fmt"}, inModule: true},
		m("table/input"):      {imports: []string{m("query/filter")}, inModule: true},
		m("query/filter"):     {inModule: true},
		m("cache/blockcache"): {imports: []string{m("table/storage")}, inModule: true},
		m("table/storage"):    {imports: []string{m("cache")}, inModule: true},
		m("cache"):            {imports: []string{m("decoder")}, inModule: true},
		m("decoder"):          {imports: []string{astiav, m("serving")}, cgoFiles: 3, inModule: true},
		m("ingest"):           {inModule: true},
		m("videoidx"):         {imports: []string{gofuse + "/v2/fs"}, inModule: true},
		m("table/lerobot"):    {imports: []string{m("fusefs")}, inModule: true},
		m("fusefs"):           {imports: []string{m("media"), gofuse + "/v2/fs"}, inModule: true},
		m("media"):            {imports: []string{m("videoidx")}, cgoFiles: 1, inModule: true},
		m("cmd/framefs"):      {imports: []string{gofuse + "/v2/fuse"}, inModule: true},
		m("serving"):          {imports: []string{m("media")}, inModule: true},
		astiav:                {imports: []string{"C"}},
		gofuse + "/v2/fs":     {imports: []string{gofuse + "/v2/fuse"}},
		gofuse + "/v2/fuse":   {},
		"fmt":                 {},
	}
	got := strings.Join(violations(g), "\n")
	for _, want := range []string{
		// the chain is named link by link
		m("table") + " depends on " + m("decoder") + " through\n\t" + m("table") + "\n\t-> " + m("table/storage") + "\n\t-> " + m("cache") + "\n\t-> " + m("decoder"),
		m("videoidx") + " depends on " + gofuse + "/v2/fs",
		m("media") + " depends on " + gofuse + "/v2/fs", // through videoidx
		m("table/lerobot") + " depends on " + m("fusefs"),
		m("media") + " has 1 cgo files",
		m("cmd/framefs") + " imports " + gofuse + "/v2/fuse",
		m("videoidx") + " imports " + gofuse,
		m("decoder") + " depends on " + m("serving"),
		"the table format does not know the query engine: " + m("table/input") + " depends on " + m("query/filter"),
		"caches know nothing of what they hold: " + m("cache/blockcache") + " depends on " + m("table/storage"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations do not report %q; they are:\n%s", want, got)
		}
	}
	for _, clean := range []string{m("ingest") + " depends", m("fusefs") + " depends", m("decoder") + " has"} {
		if strings.Contains(got, clean) {
			t.Errorf("violations report %q, which breaks no rule:\n%s", clean, got)
		}
	}
	// The model reaching fusefs (and go-fuse through it) breaks its rule.
	g[m("mounttree")] = pkg{imports: []string{m("fusefs")}, inModule: true}
	if got := strings.Join(violations(g), "\n"); !strings.Contains(got, m("mounttree")+" depends on "+m("fusefs")) {
		t.Errorf("the mount model importing fusefs is not reported:\n%s", got)
	}
	delete(g, m("mounttree"))
	// fusefs reaching the decoder breaks its rule.
	g[m("fusefs")] = pkg{imports: []string{m("decoder")}, inModule: true}
	if got := strings.Join(violations(g), "\n"); !strings.Contains(got, m("fusefs")+" depends on "+astiav) &&
		!strings.Contains(got, m("fusefs")+" depends on "+m("decoder")) {
		t.Errorf("fusefs importing the decoder is not reported:\n%s", got)
	}
}
