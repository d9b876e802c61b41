package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"
)

// KeyPrefix starts every API key the gateway hands out.
const KeyPrefix = "forkbomb_sk_"

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randBase62 draws n characters uniformly (crypto/rand.Int rejects
// the bias a modulo would bring).
func randBase62(n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(base62)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(fmt.Errorf("crypto/rand: %w", err)) // the OS has no randomness: nothing is safe
		}
		b[i] = base62[v.Int64()]
	}
	return string(b)
}

// Secrets are the server's HMAC keys by version. New API keys are signed
// with the highest version; every version still verifies, so a secret is
// rotated by adding a version and retiring the old one later. They live
// outside the database: a stolen database holds digests no one can invert
// or recompute.
type Secrets map[int][]byte

// Current is the version new keys are signed with.
func (s Secrets) Current() int {
	v := 0
	for k := range s {
		v = max(v, k)
	}
	return v
}

// LoadSecrets reads a secret file: lines "VERSION HEX", 32 bytes or more
// each. create makes one (version 1, mode 0600) when the file is absent.
func LoadSecrets(path string, create bool) (Secrets, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		line := "1 " + hex.EncodeToString(randBytes(32)) + "\n"
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create secret file: %w", err)
		}
		_, err = f.WriteString(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("create secret file: %w", err)
		}
		data = []byte(line)
	} else if err != nil {
		return nil, fmt.Errorf("read secret file: %w", err)
	}
	s := Secrets{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err := strconv.Atoi(f[0])
		if len(f) != 2 || err != nil || v <= 0 {
			return nil, fmt.Errorf("%w: each line is VERSION HEX", ErrBadSecret)
		}
		k, err := hex.DecodeString(f[1])
		if err != nil || len(k) < 32 {
			return nil, fmt.Errorf("%w: version %d: 32 bytes or more, hex", ErrBadSecret, v)
		}
		s[v] = k
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: no secret in %s", ErrBadSecret, path)
	}
	return s, nil
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Errorf("crypto/rand: %w", err))
	}
	return b
}

func newID(prefix string) string { return prefix + randBase62(20) }

// digest is the stored form of key under secret version v.
func (s Secrets) digest(v int, key string) string {
	m := hmac.New(sha256.New, s[v])
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

// CreateWorkspace makes a workspace and its first key, returned once.
func (g *Gateway) CreateWorkspace(ctx context.Context) (id, key string, err error) {
	id, key = newID("ws_"), KeyPrefix+randBase62(32)
	v := g.secrets.Current()
	now := time.Now().Unix()
	tx, err := g.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return "", "", fmt.Errorf("create workspace: %w", err)
	}
	defer tx.Rollback()
	if _, err := g.db.exec(ctx, tx, `INSERT INTO workspaces (id, created_at, balance) VALUES (?, ?, 0)`, id, now); err != nil {
		return "", "", fmt.Errorf("create workspace: %w", err)
	}
	if _, err := g.db.exec(ctx, tx, `INSERT INTO api_keys (digest, key_version, workspace_id, created_at) VALUES (?, ?, ?, ?)`,
		g.secrets.digest(v, key), v, id, now); err != nil {
		return "", "", fmt.Errorf("create workspace: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return "", "", fmt.Errorf("create workspace: %w", err)
	}
	return id, key, nil
}

// Authenticate maps a presented key to its workspace. The digest is the
// lookup key, so the database never compares secrets; the stored digest
// is compared again in constant time, and only under the version it was
// made with.
func (g *Gateway) Authenticate(ctx context.Context, key string) (string, error) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) != len(KeyPrefix)+32 {
		return "", ErrNotFound
	}
	for v := range g.secrets {
		want := g.secrets.digest(v, key)
		var stored, ws string
		var ver int
		err := g.db.sql.QueryRowContext(ctx, g.db.q(`SELECT digest, key_version, workspace_id FROM api_keys WHERE digest = ?`), want).Scan(&stored, &ver, &ws)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("authenticate: %w", err)
		}
		if ver == v && hmac.Equal([]byte(stored), []byte(want)) {
			return ws, nil
		}
	}
	return "", ErrNotFound
}
