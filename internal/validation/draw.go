package validation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PopulationHash is the hex SHA-256 of a population's cell ids, sorted
// bytewise and each followed by a newline: the same set of cells gives the
// same hash whatever order they were listed in, and a cell more or less
// gives another.
func PopulationHash(ids []string) (string, error) {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	h := sha256.New()
	for i, id := range sorted {
		if id == "" || strings.ContainsRune(id, '\n') {
			return "", fmt.Errorf("cell id %q: ids are non-empty and hold no newline", id)
		}
		if i > 0 && sorted[i-1] == id {
			return "", fmt.Errorf("cell id %q is listed twice", id)
		}
		h.Write([]byte(id + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Draw returns k cells of a population drawn at random, reproducibly from
// the seed: each cell's key is SHA-256(seed ‖ "\n" ‖ population hash ‖ "\n"
// ‖ cell id), and the sample is the k cells with the smallest keys
// (compared as bytes), in that order. Every subset of k cells is equally
// likely under a random seed, the draw depends on the population as a set
// (not its order), and anyone can redraw it with a SHA-256 tool:
//
//	printf '%s\n%s\n%s' SEED POPHASH CELL | sha256sum
//
// for every cell, sorted. The population hash is PopulationHash's.
func Draw(seed string, ids []string, k int) (sample []string, populationHash string, err error) {
	if seed == "" {
		return nil, "", errors.New("the seed is empty: record a seed before drawing, so the draw can be repeated")
	}
	if k < 0 || k > len(ids) {
		return nil, "", fmt.Errorf("cannot draw %d cells of %d", k, len(ids))
	}
	populationHash, err = PopulationHash(ids)
	if err != nil {
		return nil, "", err
	}
	type keyed struct {
		key [sha256.Size]byte
		id  string
	}
	keys := make([]keyed, len(ids))
	prefix := seed + "\n" + populationHash + "\n"
	for i, id := range ids {
		keys[i] = keyed{sha256.Sum256([]byte(prefix + id)), id}
	}
	slices.SortFunc(keys, func(a, b keyed) int { return bytes.Compare(a.key[:], b.key[:]) })
	sample = make([]string, k)
	for i := range sample {
		sample[i] = keys[i].id
	}
	return sample, populationHash, nil
}
