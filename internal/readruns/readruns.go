// Package readruns tells apart the sequential readers of one object whose
// reads interleave (the decoder sessions and read-ahead of one video, the
// workers decoding its GOPs), so that a reader going on where it stopped
// can be recognised and read for ahead. It knows nothing of what is read.
package readruns

// Max is how many runs a Set tells apart.
const Max = 4

// Run is a run of reads, each starting where the previous one ended
// (give or take the Set's gap).
type Run struct {
	Start, End int64 // bytes [Start, End) were read in order
	// Ahead is the caller's to keep: how far to read ahead for this run.
	Ahead int64
	used  uint64 // Set.clock at the last read; 0: unused
}

// Set holds the last Max runs of reads of one object. It is not safe for
// concurrent use.
type Set struct {
	// Gap is how far before or after a run's end a read may start and
	// still continue it (a demuxer skipping another track's packets).
	Gap   int64
	runs  [Max]Run
	clock uint64
}

// Find returns the run a read at off would continue, or nil.
func (s *Set) Find(off int64) *Run {
	for i := range s.runs {
		if r := &s.runs[i]; r.used != 0 && off >= r.Start && off >= r.End-s.Gap && off <= r.End+s.Gap {
			return r
		}
	}
	return nil
}

// Read records a read of [off, end) in the run it continues, or in a new
// run replacing the least recently used one (fresh is then true).
func (s *Set) Read(off, end int64) (r *Run, fresh bool) {
	s.clock++
	if r = s.Find(off); r == nil {
		r = &s.runs[0]
		for i := range s.runs {
			if s.runs[i].used < r.used {
				r = &s.runs[i]
			}
		}
		*r = Run{Start: off, End: off}
		fresh = true
	}
	r.End, r.used = max(r.End, end), s.clock
	return r, fresh
}
