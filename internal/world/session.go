package world

import (
	"context"
	"io"
)

// ExecFile runs one script in the world at file, under its lock, and saves what the script
// left unless a limit ended it. Every call reads the file afresh: the state lives there, so a
// server restarted between calls loses nothing.
func ExecFile(ctx context.Context, file, script string, stdin io.Reader, l Limits) (Result, error) {
	unlock, err := Lock(ctx, file)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	w, err := Load(file, l.withDefaults().MaxSize)
	if err != nil {
		return Result{}, err
	}
	res, err := w.Exec(ctx, script, stdin, l)
	if err != nil {
		return res, err
	}
	if res.Limit == "" {
		if err := w.Save(file); err != nil {
			return res, err
		}
	}
	return res, nil
}
