package canary

import (
	"encoding/json"
	"fmt"

	"github.com/forkbomb/forkbomb/internal/atomicfile"
)

// The cache ($FORKBOMB_HOME/canary.json) keeps the last result for each
// agent CLI version: a run with that engine starts forks only when the
// canary passed for the version installed now.

// cacheFile is canary.json's content.
type cacheFile struct {
	Version int                `json:"version"` // of this format: 1
	Results map[string]*Result `json:"results"` // by key(engine, version, where)
}

const maxCache = 4 << 20

// key names a result: its engine and version, and where it ran when that
// is not this machine (Result.Where).
func key(engine, version, where string) string {
	if where == "" {
		return engine + "@" + version
	}
	return engine + "@" + version + " in " + where
}

// Lookup returns the cached result for an engine's version where it ran
// ("": this machine), if any.
func Lookup(path, engine, version, where string) (*Result, error) {
	c, err := load(path)
	if err != nil {
		return nil, err
	}
	return c.Results[key(engine, version, where)], nil
}

// Save records res in the cache at path, replacing the result for the
// same engine and version. The write is atomic and locked against other
// forkbomb processes.
func Save(path string, res *Result) error {
	err := atomicfile.Update(path, maxCache, func(old []byte) ([]byte, error) {
		c, err := parse(path, old)
		if err != nil {
			return nil, err
		}
		c.Results[key(res.Engine, res.Version, res.Where)] = res
		data, err := json.MarshalIndent(c, "", "  ")
		return append(data, '\n'), err
	})
	if err != nil {
		return fmt.Errorf("canary cache: %w", err)
	}
	return nil
}

// load reads the cache; a missing file is an empty cache, a malformed one
// an error naming the file (never silently a pass).
func load(path string) (*cacheFile, error) {
	data, err := atomicfile.Read(path, maxCache)
	if err == nil {
		var c *cacheFile
		if c, err = parse(path, data); err == nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("canary cache: %w", err)
}

// parse reads the cache's content (nil: none yet).
func parse(path string, data []byte) (*cacheFile, error) {
	c := &cacheFile{Version: 1, Results: map[string]*Result{}}
	if data == nil {
		return c, nil
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("%s: %w (remove it and run forkbomb canary again)", path, err)
	}
	if c.Results == nil {
		c.Results = map[string]*Result{}
	}
	return c, nil
}
