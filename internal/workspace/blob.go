package workspace

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
)

// blobWriter writes git blobs as loose objects into a scratch object
// directory. forkbomb hashes the bytes it has already read safely itself,
// rather than handing git a path to open: git's --stdin-paths reads a
// line, so a name ending in "\r" named another file (a symlink the fork
// planted), and a path is whatever the filesystem says it is when git gets
// to it.
type blobWriter struct {
	dir    string
	sha256 bool // the repository's object format
}

// writeObject writes one object of the given kind ("blob", "tree").
func (b blobWriter) writeObject(kind string, data []byte) (string, error) {
	header := objectHeader(kind, data)
	sum := objectID(header, data, b.sha256)
	dir := filepath.Join(b.dir, sum[:2])
	dst := filepath.Join(dir, sum[2:])
	if _, err := os.Lstat(dst); err == nil {
		return sum, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	zw.Write([]byte(header))
	zw.Write(data)
	if err := zw.Close(); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(z.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write object %s: %w", sum, err)
	}
	return sum, nil
}

// objectHeader is the header git hashes and stores before an object's bytes.
func objectHeader(kind string, data []byte) string {
	return kind + " " + strconv.Itoa(len(data)) + "\x00"
}

// objectID is the id git gives the object of header and data, in hex: SHA-1,
// or SHA-256 in a repository of that format.
func objectID(header string, data []byte, sha256Format bool) string {
	var h hash.Hash = sha1.New()
	if sha256Format {
		h = sha256.New()
	}
	h.Write([]byte(header))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// writeFiles writes files (slash paths of single-component names made by
// walking a tree, so never ".." or absolute) under dir, which forkbomb made.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for p, data := range files {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
