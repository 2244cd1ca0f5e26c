// Package fencetoken shows fencing tokens to people and reads them back:
// EPOCH·COUNT, the two halves of a token (docs/design.md, "Failover"),
// as lockctl's commands and console print and accept them.
package fencetoken

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// EpochBits is how many low bits of a fencing token hold the count; the
// bits above them hold the epoch (see "Failover" in locker's doc.go).
const EpochBits = 40

// Separator joins a token's epoch and count when it is shown to a person:
// "1·25". Parse also accepts "." for keyboards without ·.
const Separator = "·"

const (
	tokenCountMask = 1<<EpochBits - 1
	maxTokenEpoch  = 1<<(63-EpochBits) - 1
)

// Parts splits a token into its epoch and the count within the epoch.
func Parts(token int64) (epoch, count int64) {
	return token >> EpochBits, token & tokenCountMask
}

// Format shows a token as EPOCH·COUNT ("1·25" for 1099511627801): the
// same value as the number, readable on a screen and over the phone.
// Tokens of epoch 0 read "0·25". Parse reads it back.
func Format(token int64) string {
	epoch, count := Parts(token)
	return strconv.FormatInt(epoch, 10) + Separator + strconv.FormatInt(count, 10)
}

// Parse reads a fencing token written as the full number
// ("1099511627801"), as EPOCH·COUNT ("1·25", what Format writes) or as
// EPOCH.COUNT ("1.25"). The token must be positive; the count must fit in
// EpochBits bits and the epoch in the rest of an int64.
func Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	epochText, countText, split := strings.Cut(s, Separator)
	if !split {
		epochText, countText, split = strings.Cut(s, ".")
	}
	if !split {
		n, err := parseNumber(s)
		if err != nil {
			return 0, err
		}
		if n <= 0 {
			return 0, errors.New("must be positive")
		}
		return n, nil
	}
	epoch, err := parseNumber(epochText)
	if err != nil {
		return 0, fmt.Errorf("epoch: %w", err)
	}
	count, err := parseNumber(countText)
	if err != nil {
		return 0, fmt.Errorf("count: %w", err)
	}
	switch {
	case epoch < 0 || count < 0:
		return 0, errors.New("must be positive")
	case epoch > maxTokenEpoch:
		return 0, fmt.Errorf("epoch too large (at most %d)", maxTokenEpoch)
	case count > tokenCountMask:
		return 0, fmt.Errorf("count too large (at most %d)", int64(tokenCountMask))
	case epoch == 0 && count == 0:
		return 0, errors.New("must be positive")
	}
	return epoch<<EpochBits | count, nil
}

// parseNumber reads one decimal part of a token.
func parseNumber(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		var numErr *strconv.NumError
		if errors.As(err, &numErr) && errors.Is(numErr.Err, strconv.ErrRange) {
			return 0, errors.New("too large for a token")
		}
		return 0, errors.New("not a token (a positive whole number, or EPOCH·COUNT as in 1·25)")
	}
	return n, nil
}
