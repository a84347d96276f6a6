package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// The OCI image spec's media types (image-spec v1.1).
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string   `json:"User"`
		Entrypoint []string `json:"Entrypoint"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// writeImage writes an OCI image layout of one static binary: one layer holding /<its name> (0755,
// owner 0:0, mtime 0), run as user as its entrypoint, tagged ref in index.json. Byte for byte the
// same for the same binary and the same build of this tool (Go's gzip at level 6, no name, no time),
// so the digest only changes with them. The layout folder must not exist or be empty. Returns the
// manifest digest, sha256:<hex>.
func writeImage(layoutDir, binary, user, ref string) (digest string, err error) {
	// A failed image leaves an empty folder (or none), never a layout that looks whole.
	defer func() {
		if err != nil {
			if entries, _ := os.ReadDir(layoutDir); entries != nil {
				_ = os.RemoveAll(filepath.Join(layoutDir, "blobs"))
				_ = os.Remove(filepath.Join(layoutDir, "index.json"))
				_ = os.Remove(filepath.Join(layoutDir, "oci-layout"))
			}
		}
	}()
	if entries, err := os.ReadDir(layoutDir); err == nil && len(entries) > 0 {
		return "", fmt.Errorf("%s is not empty: an image layout is written into an empty or new folder", layoutDir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	blobs := filepath.Join(layoutDir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return "", err
	}
	name := filepath.Base(binary)

	layer, diffID, err := writeLayer(blobs, binary, name)
	if err != nil {
		return "", fmt.Errorf("the layer of %s: %w", binary, err)
	}
	var config imageConfig
	// The binaries are built for this machine, as this tool is.
	config.Architecture, config.OS = runtime.GOARCH, "linux"
	config.Config.User = user
	config.Config.Entrypoint = []string{"/" + name}
	config.RootFS.Type = "layers"
	config.RootFS.DiffIDs = []string{diffID}
	configDesc, err := writeJSONBlob(blobs, mediaTypeConfig, config)
	if err != nil {
		return "", err
	}
	manifestDesc, err := writeJSONBlob(blobs, mediaTypeManifest, manifest{
		SchemaVersion: 2, MediaType: mediaTypeManifest, Config: configDesc, Layers: []descriptor{layer},
	})
	if err != nil {
		return "", err
	}
	manifestDesc.Annotations = map[string]string{refNameAnnotation: ref}
	indexJSON, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{manifestDesc}})
	if err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(layoutDir, "index.json"), indexJSON, 0o644); err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(layoutDir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return "", err
	}
	return manifestDesc.Digest, nil
}

// writeLayer streams the binary through tar and gzip into a blob, hashing the tar (the diff ID) and
// the gzip (the blob's digest) on the way: a 100 MB binary is read once and never held in memory.
func writeLayer(blobs, binary, name string) (descriptor, string, error) {
	in, err := os.Open(binary)
	if err != nil {
		return descriptor{}, "", err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return descriptor{}, "", err
	}
	if !info.Mode().IsRegular() {
		return descriptor{}, "", fmt.Errorf("%s is not a regular file", binary)
	}
	return writeBlob(blobs, mediaTypeLayer, func(w io.Writer) (string, error) {
		gz, err := gzip.NewWriterLevel(w, 6)
		if err != nil {
			return "", err
		}
		diff := sha256.New()
		tw := tar.NewWriter(io.MultiWriter(gz, diff))
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: info.Size(), ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR,
		}); err != nil {
			return "", err
		}
		if n, err := io.Copy(tw, in); err != nil {
			return "", err
		} else if n != info.Size() {
			return "", fmt.Errorf("%s changed while read (%d bytes, %d expected)", binary, n, info.Size())
		}
		if err := tw.Close(); err != nil {
			return "", err
		}
		if err := gz.Close(); err != nil {
			return "", err
		}
		return "sha256:" + hex.EncodeToString(diff.Sum(nil)), nil
	})
}

func writeJSONBlob(blobs, mediaType string, value any) (descriptor, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return descriptor{}, err
	}
	desc, _, err := writeBlob(blobs, mediaType, func(w io.Writer) (string, error) {
		_, err := w.Write(data)
		return "", err
	})
	return desc, err
}

// writeBlob stores what write writes as blobs/sha256/<its sha256>, under a temporary name until complete.
func writeBlob(blobs, mediaType string, write func(io.Writer) (string, error)) (descriptor, string, error) {
	tmp, err := os.CreateTemp(blobs, ".blob-*")
	if err != nil {
		return descriptor{}, "", err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	digest := sha256.New()
	counter := &countingWriter{}
	extra, err := write(io.MultiWriter(tmp, digest, counter))
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return descriptor{}, "", err
	}
	hexDigest := hex.EncodeToString(digest.Sum(nil))
	if err := os.Rename(tmp.Name(), filepath.Join(blobs, hexDigest)); err != nil {
		return descriptor{}, "", err
	}
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hexDigest, Size: counter.n}, extra, nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
