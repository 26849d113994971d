// Package fileindex is the in-memory index of an on-disk cache's files:
// their names and sizes in least-recently-used order, bounded by their total
// size. Package diskcache keeps one; what the files hold, how they are
// checked and when the directory is scanned stay with the cache.
package fileindex

import "container/list"

// Index is an LRU index of files. It is not safe for concurrent use: the
// cache that owns it guards it with its own lock.
type Index struct {
	maxBytes int64
	lru      *list.List               // of *entry, most recently used at the front
	byName   map[string]*list.Element // file name -> element of lru
	bytes    int64
}

type entry struct {
	name  string
	size  int64
	epoch uint64
}

// New returns an empty index bounded to maxBytes.
func New(maxBytes int64) *Index {
	return &Index{maxBytes: maxBytes, lru: list.New(), byName: map[string]*list.Element{}}
}

// Len is the number of files indexed; Bytes their total size.
func (x *Index) Len() int     { return x.lru.Len() }
func (x *Index) Bytes() int64 { return x.bytes }

// Has reports whether name is indexed.
func (x *Index) Has(name string) bool {
	_, ok := x.byName[name]
	return ok
}

// Touch marks name as just used; it reports whether name is indexed.
func (x *Index) Touch(name string) bool {
	el, ok := x.byName[name]
	if ok {
		x.lru.MoveToFront(el)
	}
	return ok
}

// Put indexes name as the most recently used file, of size bytes, replacing
// what was indexed under it. epoch tags the entry for ForgetMissing.
func (x *Index) Put(name string, size int64, epoch uint64) {
	x.Forget(name)
	x.byName[name] = x.lru.PushFront(&entry{name, size, epoch})
	x.bytes += size
}

// PutOldest indexes name, unless it is indexed, as the least recently used
// file: what a scan of the directory finds behind what was used meanwhile.
func (x *Index) PutOldest(name string, size int64, epoch uint64) {
	if x.Has(name) {
		return
	}
	x.byName[name] = x.lru.PushBack(&entry{name, size, epoch})
	x.bytes += size
}

// Forget drops name from the index, if it is there.
func (x *Index) Forget(name string) {
	if el, ok := x.byName[name]; ok {
		x.bytes -= el.Value.(*entry).size
		x.lru.Remove(el)
		delete(x.byName, name)
	}
}

// ForgetMissing drops the files indexed before epoch that a scan did not
// find on disk (onDisk): another process removed them.
func (x *Index) ForgetMissing(onDisk map[string]bool, epoch uint64) {
	for name, el := range x.byName {
		if !onDisk[name] && el.Value.(*entry).epoch < epoch {
			x.Forget(name)
		}
	}
}

// Evict drops least recently used files until the index fits its bound and
// returns their names, for the caller to remove (outside its lock).
func (x *Index) Evict() []string {
	var victims []string
	for x.bytes > x.maxBytes && x.lru.Len() > 0 {
		e := x.lru.Back().Value.(*entry)
		x.Forget(e.name)
		victims = append(victims, e.name)
	}
	return victims
}
