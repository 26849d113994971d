package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestPutIfAbsentOneWinner(t *testing.T) {
	ctx := context.Background()
	s, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		key := fmt.Sprintf("snapshot/%010d.json", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				err := s.PutIfAbsent(ctx, key, []byte(fmt.Sprintf("writer %d", w)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, ErrExists):
					t.Error(err)
				}
			}(w)
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d winners", round, wins)
		}
		data, err := s.ReadAll(ctx, key)
		if err != nil || !strings.HasPrefix(string(data), "writer ") {
			t.Fatalf("round %d: %q %v", round, data, err)
		}
	}
	temps, err := s.ListTemporaries()
	if err != nil || len(temps) != 0 {
		t.Fatalf("temporaries left: %v %v", temps, err)
	}
}

func TestLocalBasics(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := NewLocal(dir)
	if _, err := s.Put(ctx, "data/a.parquet", strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	obj, err := s.Open(ctx, "data/a.parquet")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := obj.ReadAt(buf, 2); err != nil || string(buf) != "llo" || obj.Size() != 5 {
		t.Fatalf("ranged read %q size %d: %v", buf, obj.Size(), err)
	}
	obj.Close()
	// A crashed writer's temporary file is invisible to List.
	os.WriteFile(filepath.Join(dir, "data", tempPrefix+"123"), []byte("partial"), 0o644)
	list, err := s.List(ctx, "data/")
	if err != nil || len(list) != 1 || list[0].Key != "data/a.parquet" {
		t.Fatalf("list %v %v", list, err)
	}
	temps, _ := s.ListTemporaries()
	if len(temps) != 1 {
		t.Fatalf("temporaries %v", temps)
	}
	if err := s.DeleteTemporary(temps[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAll(ctx, "data/missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing object: %v", err)
	}
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a\x00b", "a\\b", "./a", tempPrefix + "x"} {
		if _, err := s.Put(ctx, bad, strings.NewReader("")); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	if err := s.Delete(ctx, "data/a.parquet"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "data/a.parquet"); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
}
