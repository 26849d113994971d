// Package fileindex is the in-memory index of an on-disk cache's files:
// their names and sizes in least-recently-used order, bounded by their total
// size. Package diskcache keeps one; what the files hold, how they are
// checked and when the directory is scanned stay with the cache.
//
// A disk tier holds hundreds of thousands of files (10 GiB of 36 KB frames
// is 300,000), and the index is what each costs in memory. So the index
// keeps no pointers: the files are slots of one slice, linked in LRU order
// by their positions, and found by a map from name to position. With a
// name that is a 20-byte digest, a file costs about 90 bytes (a
// container/list of string names cost 174).
package fileindex

// none is the position of no slot: the end of the LRU list.
const none = -1

// Index is an LRU index of files named by values of K. It is not safe for
// concurrent use: the cache that owns it guards it with its own lock.
type Index[K comparable] struct {
	maxBytes int64
	slots    []slot[K]
	at       map[K]int32 // name -> position in slots
	// newest and oldest are the positions of the ends of the LRU list.
	newest, oldest int32
	bytes          int64
}

// slot is a file; newer and older link it into the LRU list.
type slot[K comparable] struct {
	name         K
	size         int64
	epoch        uint64
	newer, older int32
}

// New returns an empty index bounded to maxBytes.
func New[K comparable](maxBytes int64) *Index[K] {
	return &Index[K]{maxBytes: maxBytes, at: map[K]int32{}, newest: none, oldest: none}
}

// Len is the number of files indexed; Bytes their total size.
func (x *Index[K]) Len() int     { return len(x.slots) }
func (x *Index[K]) Bytes() int64 { return x.bytes }

// Has reports whether name is indexed.
func (x *Index[K]) Has(name K) bool {
	_, ok := x.at[name]
	return ok
}

// Touch marks name as just used; it reports whether name is indexed.
func (x *Index[K]) Touch(name K) bool {
	i, ok := x.at[name]
	if ok {
		x.unlink(i)
		x.linkNewest(i)
	}
	return ok
}

// Put indexes name as the most recently used file, of size bytes, replacing
// what was indexed under it. epoch tags the entry for ForgetMissing.
func (x *Index[K]) Put(name K, size int64, epoch uint64) {
	x.Forget(name)
	x.linkNewest(x.add(name, size, epoch))
}

// PutOldest indexes name, unless it is indexed, as the least recently used
// file: what a scan of the directory finds behind what was used meanwhile.
func (x *Index[K]) PutOldest(name K, size int64, epoch uint64) {
	if x.Has(name) {
		return
	}
	x.linkOldest(x.add(name, size, epoch))
}

// Forget drops name from the index, if it is there.
func (x *Index[K]) Forget(name K) {
	i, ok := x.at[name]
	if !ok {
		return
	}
	x.unlink(i)
	x.bytes -= x.slots[i].size
	delete(x.at, name)
	// The last slot moves into the hole, so that the slice stays dense.
	last := int32(len(x.slots) - 1)
	if i != last {
		moved := x.slots[last]
		x.slots[i] = moved
		x.at[moved.name] = i
		if moved.newer != none {
			x.slots[moved.newer].older = i
		} else {
			x.newest = i
		}
		if moved.older != none {
			x.slots[moved.older].newer = i
		} else {
			x.oldest = i
		}
	}
	var zero slot[K]
	x.slots[last] = zero
	x.slots = x.slots[:last]
	if cap(x.slots) > 64 && len(x.slots) < cap(x.slots)/4 {
		// Most files went (a cleared or shrunk cache): give the memory back.
		x.slots = append([]slot[K](nil), x.slots...)
	}
}

// ForgetMissing drops the files indexed before epoch that a scan did not
// find on disk (onDisk): another process removed them.
func (x *Index[K]) ForgetMissing(onDisk map[K]bool, epoch uint64) {
	var gone []K
	for _, s := range x.slots {
		if !onDisk[s.name] && s.epoch < epoch {
			gone = append(gone, s.name)
		}
	}
	for _, name := range gone {
		x.Forget(name)
	}
}

// Evict drops least recently used files until the index fits its bound and
// returns their names, for the caller to remove (outside its lock).
func (x *Index[K]) Evict() []K {
	var victims []K
	for x.bytes > x.maxBytes && x.oldest != none {
		name := x.slots[x.oldest].name
		x.Forget(name)
		victims = append(victims, name)
	}
	return victims
}

// add appends an unlinked slot for name and returns its position.
func (x *Index[K]) add(name K, size int64, epoch uint64) int32 {
	i := int32(len(x.slots))
	x.slots = append(x.slots, slot[K]{name: name, size: size, epoch: epoch, newer: none, older: none})
	x.at[name] = i
	x.bytes += size
	return i
}

// linkNewest links the unlinked slot i at the newest end.
func (x *Index[K]) linkNewest(i int32) {
	s := &x.slots[i]
	s.newer, s.older = none, x.newest
	if x.newest != none {
		x.slots[x.newest].newer = i
	} else {
		x.oldest = i
	}
	x.newest = i
}

// linkOldest links the unlinked slot i at the oldest end.
func (x *Index[K]) linkOldest(i int32) {
	s := &x.slots[i]
	s.newer, s.older = x.oldest, none
	if x.oldest != none {
		x.slots[x.oldest].older = i
	} else {
		x.newest = i
	}
	x.oldest = i
}

// unlink takes slot i out of the LRU list.
func (x *Index[K]) unlink(i int32) {
	s := &x.slots[i]
	if s.newer != none {
		x.slots[s.newer].older = s.older
	} else {
		x.newest = s.older
	}
	if s.older != none {
		x.slots[s.older].newer = s.newer
	} else {
		x.oldest = s.newer
	}
	s.newer, s.older = none, none
}
