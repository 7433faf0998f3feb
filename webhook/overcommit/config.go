package overcommit

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"strconv"
)

// Config holds the ratios of Nodes that carry no ratio annotations.
type Config struct {
	CPURatio, MemoryRatio float64
}

// DefaultConfig doubles CPU and leaves memory alone: CPU is compressible, so
// an overcommitted node throttles; memory is not, so it would OOM-kill.
func DefaultConfig() Config {
	return Config{CPURatio: 2, MemoryRatio: 1}
}

// BindFlags registers the ratio flags on fs, with DefaultConfig's values as
// defaults. Call Validate once the flags are parsed.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.Float64Var(&c.CPURatio, "overcommit-cpu-ratio", d.CPURatio, "allocatable CPU is multiplied by this on Nodes without the "+CPURatioAnnotation+" annotation")
	fs.Float64Var(&c.MemoryRatio, "overcommit-memory-ratio", d.MemoryRatio, "allocatable memory is multiplied by this on Nodes without the "+MemoryRatioAnnotation+" annotation")
}

// Validate rejects ratios that are not positive numbers.
func (c Config) Validate() error {
	var errs []error
	if _, err := ratioOf(c.CPURatio); err != nil {
		errs = append(errs, fmt.Errorf("--overcommit-cpu-ratio: %w", err))
	}
	if _, err := ratioOf(c.MemoryRatio); err != nil {
		errs = append(errs, fmt.Errorf("--overcommit-memory-ratio: %w", err))
	}
	return errors.Join(errs...)
}

// ratioOf is f as the decimal it was written as: 1.15 is 115/100, not the
// binary fraction just below it, which would round 100 down to 114.
func ratioOf(f float64) (*big.Rat, error) {
	return parseRatio(strconv.FormatFloat(f, 'g', -1, 64))
}

// parseRatio parses a positive decimal number exactly.
func parseRatio(s string) (*big.Rat, error) {
	// ParseFloat defines the accepted syntax; big.Rat alone would also take
	// fractions such as 3/2.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return nil, fmt.Errorf("%q is not a positive number", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a positive number", s)
	}
	return r, nil
}
