// Package scratch lends byte buffers to work that builds bytes only to
// copy or compress them elsewhere: the planes of a picture being packed,
// an image made only to be compressed, a compressor's worst-case output.
// Such buffers are hundreds of kilobytes; allocated afresh each time, the
// Go runtime zeroes them and the kernel faults their pages in again after
// the scavenger returned them, which cost a shuffled epoch more than the
// compression itself.
package scratch

import "sync"

var pool sync.Pool // *[]byte

// Get returns a buffer of length n, lent until Put. Its contents are
// whatever the last borrower left.
func Get(n int) *[]byte {
	if b, ok := pool.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

// Put gives b back. Nothing may use it (nor a slice of it) afterwards.
func Put(b *[]byte) { pool.Put(b) }
