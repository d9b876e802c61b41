package ui

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strconv"

	"github.com/forkbomb/forkbomb/internal/lab/eval"
)

// maxBoardAttempts bounds the attempts the board page lists (the newest);
// the table is made from all of them.
const maxBoardAttempts = 500

// boardAttempt is an attempt as the page gets it: Weak says the
// table counted it among the weak passes, so the page need not know the
// rule.
type boardAttempt struct {
	eval.Attempt
	Weak bool `json:"weak,omitempty"`
}

// board is eval's leaderboard (`forkbomb eval --tasks`): the standings
// over every attempt on the board, weak passes counted against
// ?min_strength= (default eval's), and the newest attempts, each with the
// verifier's word. A board not yet written is an empty one; a server
// given no board has none to show.
func (s *Server) board(w http.ResponseWriter, r *http.Request) {
	if s.o.Board == "" {
		http.Error(w, "this view has no eval board", http.StatusNotFound)
		return
	}
	minStrength := eval.DefaultMinStrength
	if q := r.URL.Query().Get("min_strength"); q != "" {
		v, err := strconv.ParseFloat(q, 64)
		if err != nil || v < 0 || v > 1 {
			http.Error(w, "min_strength is a share from 0 to 1", http.StatusBadRequest)
			return
		}
		minStrength = v
	}
	all := []eval.Attempt{}
	// Reading takes the board's lock, which makes its folder: a view
	// reads, so a board that does not exist is not made.
	if _, err := os.Lstat(s.o.Board); err == nil {
		if all, err = (&eval.Board{Path: s.o.Board}).Attempts(); err != nil {
			fail(w, err)
			return
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		fail(w, err)
		return
	}
	table := eval.Standings(all, minStrength)
	if table == nil {
		table = []eval.Standing{}
	}
	newest := make([]boardAttempt, 0, min(len(all), maxBoardAttempts))
	for i := len(all) - 1; i >= 0 && len(newest) < maxBoardAttempts; i-- {
		a := all[i]
		newest = append(newest, boardAttempt{a, a.Fixed && a.Strength != nil && a.Strength.Below(minStrength)})
	}
	writeJSON(w, map[string]any{"min_strength": minStrength, "table": table, "attempts": newest, "total": len(all)})
}
