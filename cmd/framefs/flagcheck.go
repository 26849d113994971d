package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// No flag value may silently mean another. A flag whose zero value stands
// for "not given" (and so for a default) cannot take zero from the
// command line: `--max-sessions 0` must not run 2 x cores sessions, and
// `--batch 0` must not commit 1,000 episodes at a time. Such flags are
// marked here with the values they take, and checkFlags refuses, before
// any command runs, a value given explicitly outside them; an empty
// string given explicitly is refused too (leaving the flag out is how to
// ask for its default). Where zero has a meaning of its own (`gc --grace
// 0s` removes every unreferenced file, `mount --cache-bytes 0` caches
// nothing) the command maps it onto its options itself.

// Annotations of flags that take only some values.
const (
	// annotRange holds the accepted range: "positive" or "non-negative".
	annotRange = "framefs:range"
	// annotEmptyOK marks a string flag whose command explains an empty
	// value itself.
	annotEmptyOK = "framefs:empty-ok"
)

// positive marks flags that take values above zero.
func positive(fl *pflag.FlagSet, names ...string) { setRange(fl, "positive", names) }

// nonNegative marks flags that take zero and values above it.
func nonNegative(fl *pflag.FlagSet, names ...string) { setRange(fl, "non-negative", names) }

func setRange(fl *pflag.FlagSet, r string, names []string) {
	for _, name := range names {
		if err := fl.SetAnnotation(name, annotRange, []string{r}); err != nil {
			panic(err) // a flag name misspelt in this package
		}
	}
}

// emptyOK marks string flags whose commands explain an empty value.
func emptyOK(fl *pflag.FlagSet, names ...string) {
	for _, name := range names {
		if err := fl.SetAnnotation(name, annotEmptyOK, []string{"true"}); err != nil {
			panic(err)
		}
	}
}

// checkFlags refuses the values given explicitly that their flags do not
// take (see positive, nonNegative and emptyOK).
func checkFlags(fl *pflag.FlagSet) error {
	var err error
	fl.Visit(func(f *pflag.Flag) {
		if err == nil {
			err = checkFlag(f)
		}
	})
	return err
}

func checkFlag(f *pflag.Flag) error {
	value := f.Value.String()
	if f.Value.Type() == "string" && value == "" && f.Annotations[annotEmptyOK] == nil {
		return fmt.Errorf("--%s was given an empty value; give one, or leave the flag out for its default", f.Name)
	}
	r := f.Annotations[annotRange]
	if len(r) == 0 {
		return nil
	}
	var sign int
	switch f.Value.Type() {
	case "int", "int64":
		n, perr := strconv.ParseInt(value, 10, 64)
		if perr != nil {
			return fmt.Errorf("--%s %s: %v", f.Name, value, perr)
		}
		sign = cmpZero(n)
	case "float64":
		x, perr := strconv.ParseFloat(value, 64)
		if perr != nil || math.IsNaN(x) {
			return fmt.Errorf("--%s %s: not a number", f.Name, value)
		}
		sign = cmpZero(x)
	case "duration":
		d, perr := time.ParseDuration(value)
		if perr != nil {
			return fmt.Errorf("--%s %s: %v", f.Name, value, perr)
		}
		sign = cmpZero(d)
	default:
		return fmt.Errorf("--%s: no range check for a flag of type %s", f.Name, f.Value.Type())
	}
	switch {
	case r[0] == "positive" && sign <= 0:
		return fmt.Errorf("--%s %s: want a value above 0 (leave the flag out for its default)", f.Name, value)
	case r[0] == "non-negative" && sign < 0:
		return fmt.Errorf("--%s %s: want 0 or more", f.Name, value)
	}
	return nil
}

func cmpZero[T int64 | float64 | time.Duration](v T) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
