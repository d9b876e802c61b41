package kube

// A tree image (Options.Registry): the pid 1's tree and forkbomb's binary
// as one more layer over the forks' image, pushed to a registry the nodes
// pull from. A container's root is already an overlay — the image's
// layers below, an upper layer of the container's own — so each fork's
// pod of that image starts with the tree in place and its writes apart:
// an O(1) fork, at the cost of a pod's start, once the node holds the
// layer. The layer's bytes are the same for the same commit (no time, no
// owner but the pod's user and root, an index with no stat data), so a
// later run of the same base finds the image already pushed and the nodes
// already holding it.

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// treeRepo is the repository of tree images under Options.Registry.
const treeRepo = "forkbomb-tree"

// treeImageTimeout bounds a tree image's making, lookup and push.
const treeImageTimeout = 15 * time.Minute

// TreeImage is what treeImage made or found.
type TreeImage struct {
	Ref    string // repository@digest: what the pods run
	Pushed bool   // false: the registry held it already
}

// treeImage makes the tree image of a pid 1 and pushes it, unless the
// registry holds it already (the same base image and the same layer);
// it returns the image by its digest.
func (s *Store) treeImage(ctx context.Context, pid1 string) (TreeImage, error) {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	baseRef, err := name.ParseReference(s.o.Image)
	if err != nil {
		return TreeImage{}, fmt.Errorf("--image %s: %w", s.o.Image, err)
	}
	// one platform: the nodes' is taken to be this machine's
	base, err := remote.Image(baseRef, append(opts, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))...)
	if err != nil {
		return TreeImage{}, fmt.Errorf("the forks' image %s from its registry (a tree image is made over it): %w", s.o.Image, err)
	}
	baseDigest, err := base.Digest()
	if err != nil {
		return TreeImage{}, err
	}
	repo, err := name.NewRepository(strings.TrimSuffix(s.o.Registry, "/") + "/" + treeRepo)
	if err != nil {
		return TreeImage{}, fmt.Errorf("--registry %s: %w", s.o.Registry, err)
	}
	bin, _, err := s.podBinFile()
	if err != nil {
		return TreeImage{}, err
	}
	tree, err := s.o.Local.Snapshot(ctx, pid1)
	if err != nil {
		return TreeImage{}, err
	}
	sweepTreeTemps(s.o.Local.Root)
	tmp, err := os.MkdirTemp(s.o.Local.Root, treeTempPrefix)
	if err != nil {
		return TreeImage{}, err
	}
	defer os.RemoveAll(tmp)
	layerPath := filepath.Join(tmp, "layer.tar")
	index := "" // the tree's .git/index, without its stat data
	if st, err := os.Lstat(filepath.Join(tree, ".git", "index")); err == nil && st.Mode().IsRegular() {
		index = filepath.Join(tmp, "index")
		if err := s.o.Local.IndexWithoutStat(ctx, pid1, index); err != nil {
			return TreeImage{}, fmt.Errorf("the tree's index: %w", err)
		}
	}
	diffID, err := writeLayer(ctx, layerPath, tree, bin, index)
	if err != nil {
		return TreeImage{}, err
	}
	key := sha256.Sum256([]byte("forkbomb tree image 2\n" + baseDigest.String() + "\n" + diffID.String() + "\n"))
	tag := repo.Tag(hex.EncodeToString(key[:]))
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return TreeImage{}, err
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return TreeImage{}, err
	}
	// what is found at the tag is run only if it is this image: one
	// manifest (not an index, whose other platforms nobody checked) whose
	// config — the layers' IDs, the environment, the user — is this one's
	if wantConfig, err := img.ConfigName(); err == nil {
		if d, err := remote.Get(tag, opts...); err == nil && d.MediaType.IsImage() {
			if found, err := d.Image(); err == nil {
				if cfg, err := found.ConfigName(); err == nil && cfg == wantConfig {
					return TreeImage{Ref: repo.Digest(d.Digest.String()).String()}, nil
				}
			}
		}
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return TreeImage{}, fmt.Errorf("push the tree image to %s: %w", repo, err)
	}
	d, err := img.Digest()
	if err != nil {
		return TreeImage{}, err
	}
	return TreeImage{Ref: repo.Digest(d.String()).String(), Pushed: true}, nil
}

// treeTempPrefix names the folders treeImage makes its layer in, in the
// state home; one a killed forkbomb left is removed by a later run's
// (sweepTreeTemps) once it is an hour old.
const treeTempPrefix = ".tree-image-"

func sweepTreeTemps(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), treeTempPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// writeLayer writes the tree image's layer (imageLayout) to path and
// returns its digest (the layer's diff ID: of its uncompressed bytes).
// index, when set, goes as the tree's .git/index (Store.IndexWithoutStat:
// all that differs between two pid 1s of one commit; in the pod every
// file's times differ from the index's anyway, so git looks at them
// afresh either way).
func writeLayer(ctx context.Context, path, tree, bin, index string) (v1.Hash, error) {
	l := imageLayout
	l.index = index
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return v1.Hash{}, err
	}
	h := sha256.New()
	if err := writeTree(ctx, io.MultiWriter(f, h), tree, bin, l); err != nil {
		f.Close()
		return v1.Hash{}, err
	}
	if err := f.Close(); err != nil {
		return v1.Hash{}, err
	}
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}, nil
}

// PinImage names image by the digest its registry gives it now
// (repository@sha256:…): with a registry (Options.Registry), the pod that
// finds an agent CLI in the forks' image and the forks' tree image are
// then of the same content whatever the tag does meanwhile, and a node
// that lacks it pulls it (pullPolicy).
func PinImage(ctx context.Context, image string) (string, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", fmt.Errorf("--image %s: %w", image, err)
	}
	if d, ok := ref.(name.Digest); ok {
		return d.String(), nil
	}
	desc, err := remote.Head(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return "", fmt.Errorf("the forks' image %s in its registry: %w", image, err)
	}
	return ref.Context().Digest(desc.Digest.String()).String(), nil
}
