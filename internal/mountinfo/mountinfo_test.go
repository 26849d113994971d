package mountinfo

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	table := `22 1 0:21 / /proc rw,nosuid - proc proc rw
35 22 0:42 / /mnt/my\040frames rw,nosuid,nodev shared:9 - fuse.framefs /data/wh ro,user_id=0
36 22 0:43 / /mnt/tab\011and\134slash rw - fuse.framefs wh rw
37 22 0:44 / /broken rw
38 22 0:45 / /mnt/my\040frames rw - fuse.framefs /data/other rw
`
	want := []Mount{
		{Device: "0:21", Point: "/proc", FSType: "proc"},
		{Device: "0:42", Point: "/mnt/my frames", FSType: "fuse.framefs"},
		{Device: "0:43", Point: "/mnt/tab\tand\\slash", FSType: "fuse.framefs"},
		{Device: "0:45", Point: "/mnt/my frames", FSType: "fuse.framefs"},
	}
	if got := Parse(table); !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

// The root of the file system is a mount point in every process; a
// directory just made is none.
func TestAt(t *testing.T) {
	if m, ok := At("/"); !ok || m.Point != "/" || m.FSType == "" {
		t.Errorf("At(/) = %+v, %v", m, ok)
	}
	if m, ok := At(t.TempDir()); ok {
		t.Errorf("a new directory is a mount point: %+v", m)
	}
}
