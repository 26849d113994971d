package filter

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// i128 is a signed 128-bit integer in two's complement: the unscaled
// value of a DECIMAL. DuckDB keeps decimals of up to 38 digits exactly
// (BIGINT + 0.5 is a DECIMAL(21,1)); so does the filter, so that
// arithmetic on int64 columns with decimal literals gives DuckDB's exact
// answers instead of rounding through float64.
type i128 struct {
	hi int64
	lo uint64
}

// maxDecimalDigits is DuckDB's widest DECIMAL.
const maxDecimalDigits = 38

func i128From(v int64) i128 { return i128{hi: v >> 63, lo: uint64(v)} }

func (a i128) neg() i128 {
	lo := ^a.lo + 1
	hi := ^a.hi
	if lo == 0 {
		hi++
	}
	return i128{hi, lo}
}

func (a i128) isNeg() bool  { return a.hi < 0 }
func (a i128) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a i128) add(b i128) i128 {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	return i128{a.hi + b.hi + int64(carry), lo}
}

func (a i128) sub(b i128) i128 { return a.add(b.neg()) }

func (a i128) cmp(b i128) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// abs returns |a| as an unsigned magnitude (hi, lo).
func (a i128) abs() (uint64, uint64) {
	if a.isNeg() {
		n := a.neg()
		return uint64(n.hi), n.lo
	}
	return uint64(a.hi), a.lo
}

// pow10s[k] is 10^k for k ≤ 38.
var pow10s = func() [maxDecimalDigits + 1]i128 {
	var p [maxDecimalDigits + 1]i128
	p[0] = i128From(1)
	for k := 1; k <= maxDecimalDigits; k++ {
		p[k], _ = p[k-1].mul(i128From(10))
	}
	return p
}()

// fits reports whether a has at most digits decimal digits (≤ 38).
func (a i128) fits(digits int) bool {
	limit := pow10s[digits]
	return a.cmp(limit) < 0 && a.cmp(limit.neg()) > 0
}

// mul returns a*b and whether it is exact within 128 bits.
func (a i128) mul(b i128) (i128, bool) {
	ah, al := a.abs()
	bh, bl := b.abs()
	if ah != 0 && bh != 0 {
		return i128{}, false
	}
	// One of the magnitudes fits 64 bits: (xh·2^64 + xl)·y.
	xh, xl, y := ah, al, bl
	if ah == 0 {
		xh, xl, y = bh, bl, al
	}
	hi1, lo := bits.Mul64(xl, y)
	hi2, mid := bits.Mul64(xh, y)
	if hi2 != 0 {
		return i128{}, false
	}
	hi, carry := bits.Add64(hi1, mid, 0)
	if carry != 0 || hi>>63 != 0 {
		return i128{}, false
	}
	r := i128{int64(hi), lo}
	if a.isNeg() != b.isNeg() {
		r = r.neg()
	}
	return r, true
}

// quoRem64 divides by a positive divisor d, truncating towards zero.
func (a i128) quoRem64(d uint64) (i128, int64) {
	neg := a.isNeg()
	h, l := a.abs()
	qh := h / d
	r := h % d
	ql, rem := bits.Div64(r, l, d)
	q := i128{int64(qh), ql}
	rs := int64(rem)
	if neg {
		q, rs = q.neg(), -rs
	}
	return q, rs
}

// quo divides truncating towards zero; b must not be zero.
func (a i128) quo(b i128) i128 {
	q, _ := a.quoRem(b)
	return q
}

// quoRem divides truncating towards zero (the remainder takes the sign
// of a, as SQL's % does); b must not be zero. Values are within DECIMAL
// range, so a long division by bits is fast enough.
func (a i128) quoRem(b i128) (i128, i128) {
	bh, bl := b.abs()
	if bh == 0 {
		q, r := a.quoRem64(bl)
		if b.isNeg() {
			q = q.neg()
		}
		return q, i128From(r)
	}
	ah, al := a.abs()
	var qh, ql, rh, rl uint64
	for i := 127; i >= 0; i-- {
		// r = r<<1 | bit i of |a|
		rh = rh<<1 | rl>>63
		rl <<= 1
		var bit uint64
		if i >= 64 {
			bit = ah >> (i - 64) & 1
		} else {
			bit = al >> i & 1
		}
		rl |= bit
		if rh > bh || rh == bh && rl >= bl {
			var borrow uint64
			rl, borrow = bits.Sub64(rl, bl, 0)
			rh, _ = bits.Sub64(rh, bh, borrow)
			if i >= 64 {
				qh |= 1 << (i - 64)
			} else {
				ql |= 1 << i
			}
		}
	}
	q, r := i128{int64(qh), ql}, i128{int64(rh), rl}
	if a.isNeg() != b.isNeg() {
		q = q.neg()
	}
	if a.isNeg() {
		r = r.neg()
	}
	return q, r
}

// scaleUp multiplies by 10^k; ok is false when the result leaves the
// DECIMAL range.
func (a i128) scaleUp(k int) (i128, bool) {
	if k == 0 {
		return a, true
	}
	if k > maxDecimalDigits {
		return i128{}, a.isZero()
	}
	r, ok := a.mul(pow10s[k])
	return r, ok && r.fits(maxDecimalDigits)
}

// scaleDown divides by 10^k rounding half away from zero, as DuckDB
// rounds decimals it casts to fewer digits.
func (a i128) scaleDown(k int) i128 {
	if k == 0 {
		return a
	}
	if k > maxDecimalDigits {
		return i128{}
	}
	q, r := a.quoRem(pow10s[k])
	half := pow10s[k].quo(i128From(2))
	rm := r
	if rm.isNeg() {
		rm = rm.neg()
	}
	// 10^k is even, so the half is exact: a remainder of at least half
	// rounds away from zero.
	if rm.cmp(half) >= 0 {
		if a.isNeg() {
			q = q.sub(i128From(1))
		} else {
			q = q.add(i128From(1))
		}
	}
	return q
}

// int64 returns a as an int64 and whether it fits.
func (a i128) int64() (int64, bool) {
	v := int64(a.lo)
	return v, a.hi == v>>63
}

// float64 converts as DuckDB casts a decimal to DOUBLE: the unscaled
// value as a double, divided by 10^scale.
func (a i128) float64(scale int) float64 {
	h, l := a.abs()
	f := float64(h)*0x1p64 + float64(l)
	if a.isNeg() {
		f = -f
	}
	return f / math.Pow10(scale)
}

// String formats the unscaled value as decimal digits.
func (a i128) String() string {
	if v, ok := a.int64(); ok {
		return strconv.FormatInt(v, 10)
	}
	neg := a.isNeg()
	var digits []byte
	for !a.isZero() {
		var r int64
		a, r = a.quoRem64(10)
		if r < 0 {
			r = -r
		}
		digits = append(digits, byte('0'+r))
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := len(digits) - 1; i >= 0; i-- {
		b.WriteByte(digits[i])
	}
	return b.String()
}

// formatDecimal writes an unscaled value with scale digits after the
// point, as DuckDB prints a DECIMAL ("1.50", "-0.5").
func formatDecimal(a i128, scale int) string {
	s := a.String()
	if scale == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// parseDecimalDigits reads a plain decimal numeral ("12.50", "-.5") as an
// unscaled value and its scale; ok is false for anything else or for
// more than 38 digits.
func parseDecimalDigits(s string) (v i128, scale int, ok bool) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	intPart, frac, hasPoint := strings.Cut(s, ".")
	if intPart == "" && frac == "" || !hasPoint && frac != "" {
		return i128{}, 0, false
	}
	digits := 0
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return i128{}, 0, false
			}
			if digits > 0 || c != '0' {
				digits++
			}
			if digits > maxDecimalDigits {
				return i128{}, 0, false
			}
			v, _ = v.mul(i128From(10))
			v = v.add(i128From(int64(c - '0')))
		}
	}
	if len(frac) > maxDecimalDigits {
		return i128{}, 0, false
	}
	if neg {
		v = v.neg()
	}
	return v, len(frac), true
}
