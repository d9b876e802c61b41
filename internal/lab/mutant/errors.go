package mutant

import "errors"

var (
	// ErrBaselineFails: the tests fail on the untouched source, so no
	// mutant can be told killed.
	ErrBaselineFails = errors.New("the tests fail without any mutant")
	// ErrNoMutants: nothing in --paths could be mutated.
	ErrNoMutants = errors.New("no mutants in the paths given")
)
