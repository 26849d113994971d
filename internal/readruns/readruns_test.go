package readruns

import "testing"

func TestRuns(t *testing.T) {
	s := Set{Gap: 10}
	r, fresh := s.Read(0, 100)
	if !fresh || r.Start != 0 || r.End != 100 {
		t.Fatalf("first read: %+v %v", r, fresh)
	}
	r.Ahead = 7
	if r2, fresh := s.Read(105, 200); fresh || r2 != r || r2.End != 200 || r2.Ahead != 7 {
		t.Fatalf("a read within the gap continues the run: %+v %v", r2, fresh)
	}
	// Four other readers: the least recently used run makes room.
	for i := int64(1); i <= Max; i++ {
		if _, fresh := s.Read(i*10000, i*10000+50); !fresh {
			t.Fatalf("reader %d joined a run", i)
		}
	}
	if s.Find(200) != nil {
		t.Fatal("the least recently used run was kept")
	}
	if r := s.Find(Max*10000 + 50); r == nil || r.Start != Max*10000 {
		t.Fatalf("Find: %+v", r)
	}
	exact := Set{}
	exact.Read(0, 8)
	if exact.Find(9) != nil || exact.Find(8) == nil {
		t.Fatal("without a gap only a read at the run's end continues it")
	}
}
