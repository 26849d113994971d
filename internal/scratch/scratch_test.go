package scratch

import "testing"

// TestGetLength lends buffers of growing and shrinking sizes, as packing
// and compressing do: each has the length asked for, whatever was given
// back before it.
func TestGetLength(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 100, 1 << 20, 10} {
		b := Get(n)
		if len(*b) != n {
			t.Fatalf("Get(%d): length %d", n, len(*b))
		}
		for i := range *b {
			(*b)[i] = byte(i)
		}
		Put(b)
	}
}
