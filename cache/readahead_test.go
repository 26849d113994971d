package cache

import "testing"

func TestReadahead(t *testing.T) {
	type step struct {
		key      string
		n        int
		from, to int // expected range; from == to for none
	}
	tests := []struct {
		name   string
		window int
		steps  []step
	}{
		{"sequential", 8, []step{
			{"a", 0, 0, 0}, {"a", 1, 0, 0},
			{"a", 2, 3, 11}, // third consecutive read: fetch the window
			{"a", 3, 0, 0}, {"a", 4, 0, 0}, {"a", 5, 0, 0},
			{"a", 6, 11, 15}, // half a window used up: top up
			{"a", 7, 0, 0}, {"a", 8, 0, 0}, {"a", 9, 0, 0},
			{"a", 10, 15, 19},
		}},
		{"repeats are not progress", 8, []step{
			{"a", 5, 0, 0}, {"a", 5, 0, 0}, {"a", 6, 0, 0}, {"a", 6, 0, 0}, {"a", 7, 8, 16},
		}},
		{"jump restarts", 4, []step{
			{"a", 0, 0, 0}, {"a", 1, 0, 0}, {"a", 2, 3, 7},
			{"a", 50, 0, 0}, {"a", 51, 0, 0}, {"a", 52, 53, 57},
		}},
		{"random is never sequential", 4, []step{
			{"a", 9, 0, 0}, {"a", 3, 0, 0}, {"a", 17, 0, 0}, {"a", 5, 0, 0}, {"a", 12, 0, 0}, {"a", 8, 0, 0}, {"a", 30, 0, 0}, {"a", 2, 0, 0},
		}},
		{"interleaved readers of one key", 4, []step{
			{"a", 0, 0, 0}, {"a", 100, 0, 0}, {"a", 1, 0, 0}, {"a", 101, 0, 0},
			{"a", 2, 3, 7}, {"a", 102, 103, 107},
		}},
		{"two loader workers, slightly out of order", 4, []step{
			{"a", 0, 0, 0}, {"a", 2, 0, 0}, {"a", 1, 0, 0}, {"a", 4, 5, 9},
		}},
		{"a stride of three is not sequential", 4, []step{
			{"a", 0, 0, 0}, {"a", 3, 0, 0}, {"a", 6, 0, 0}, {"a", 9, 0, 0},
		}},
		{"keys are separate", 4, []step{
			{"a", 0, 0, 0}, {"b", 1, 0, 0}, {"a", 1, 0, 0}, {"b", 2, 0, 0}, {"a", 2, 3, 7}, {"b", 3, 4, 8},
		}},
		{"disabled", 0, []step{{"a", 0, 0, 0}, {"a", 1, 0, 0}, {"a", 2, 0, 0}, {"a", 3, 0, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReadahead[string](tc.window, 16)
			for i, s := range tc.steps {
				from, to := r.Observe(s.key, s.n)
				if from == to && s.from == s.to {
					continue
				}
				if from != s.from || to != s.to {
					t.Errorf("step %d (%s %d): [%d, %d), want [%d, %d)", i, s.key, s.n, from, to, s.from, s.to)
				}
			}
		})
	}
}

func TestReadaheadBoundedKeys(t *testing.T) {
	r := NewReadahead[int](4, 3)
	for k := range 100 {
		r.Observe(k, 0)
		r.Observe(k, 1)
	}
	if n := r.keys.Len(); n != 3 {
		t.Errorf("follows %d keys, limit 3", n)
	}
	// The most recent key is still followed; a forgotten one starts over.
	if from, to := r.Observe(99, 2); from != 3 || to != 7 {
		t.Errorf("recent key: [%d, %d)", from, to)
	}
	if from, to := r.Observe(0, 2); from != to {
		t.Errorf("forgotten key: [%d, %d), want nothing", from, to)
	}
}
