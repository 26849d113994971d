package gcpace

import "runtime/metrics"

// Memory is the Go runtime's memory and the collector's pacing, from its
// metrics: what Run paces by, and what a mount's .stats shows, so that the
// rest of the process's anonymous memory (FFmpeg's C heap) can be told
// apart.
type Memory struct {
	// Live is what the last collection found live; Goal what the heap may
	// reach before the next one: Live plus GCPercent of it (and of the
	// stacks and globals).
	Live, Goal, GCPercent int64
	// Resident is the memory the runtime has mapped and not given back.
	Resident int64
	// Objects, Unused and Free are the heap's objects, the room between
	// them in its spans, and its whole free pages not yet given back;
	// Stacks the goroutines' stacks. With them Resident tells a burst of
	// garbage (free pages kept above the goal) from a heap that grew.
	Objects, Unused, Free, Stacks int64
	// Metadata is the runtime's own bookkeeping: span and cache
	// structures, and the collector's work buffers, which grow while it
	// marks a heap with many pointers.
	Metadata int64
	// Limit is the heap's soft limit in force (see Run).
	Limit int64
	// GCCPUSeconds is an estimate by the runtime, from the time its
	// collector workers ran.
	GCCPUSeconds float64
}

// Overhead is the runtime's memory besides the heap: stacks, its own
// bookkeeping.
func (m Memory) Overhead() int64 { return max(m.Resident-m.Objects-m.Unused-m.Free, 0) }

// memoryMetrics are the runtime metrics ReadMemory reads, in the order it
// takes them from.
var memoryMetrics = []string{
	"/gc/heap/live:bytes", "/gc/heap/goal:bytes", "/gc/gogc:percent",
	"/memory/classes/total:bytes", "/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes", "/memory/classes/heap/stacks:bytes",
	"/memory/classes/metadata/mcache/free:bytes", "/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes", "/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/other:bytes",
	"/gc/gomemlimit:bytes", "/cpu/classes/gc/total:cpu-seconds",
}

// ReadMemory reads Memory from the runtime's metrics; false from a
// runtime without them.
func ReadMemory() (Memory, bool) {
	s := make([]metrics.Sample, len(memoryMetrics))
	for i, name := range memoryMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	last := len(s) - 1
	for _, v := range s[:last] {
		if v.Value.Kind() != metrics.KindUint64 {
			return Memory{}, false
		}
	}
	if s[last].Value.Kind() != metrics.KindFloat64 {
		return Memory{}, false
	}
	v := func(i int) int64 { return int64(s[i].Value.Uint64()) }
	return Memory{
		Live: v(0), Goal: v(1), GCPercent: v(2),
		Resident: v(3) - v(4), Objects: v(5), Unused: v(6), Free: v(7), Stacks: v(8),
		Metadata: v(9) + v(10) + v(11) + v(12) + v(13),
		Limit:    v(14), GCCPUSeconds: s[last].Value.Float64(),
	}, true
}
