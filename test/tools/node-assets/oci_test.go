package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testBinary(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "pause")
	if err := os.WriteFile(path, bytes.Repeat([]byte("\x7fELF not really "), 10_000), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func image(t *testing.T, layout, binary string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run([]string{"oci-image", layout, binary, "65535:65535", "3.10"}, &out); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String())
}

// blob reads a descriptor's blob, checking that its name is its sha256 and its size the descriptor's.
func blob(t *testing.T, layout string, d descriptor) []byte {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		t.Fatalf("digest %q", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(layout, "blobs", "sha256", hexDigest))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(data)) != d.Size {
		t.Fatalf("blob %s: sha256 %x, %d bytes (descriptor: %d)", hexDigest, sum, len(data), d.Size)
	}
	return data
}

func TestOCIImage(t *testing.T) {
	dir := t.TempDir()
	binary := testBinary(t, dir)
	first, second := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	digest := image(t, first, binary)
	if again := image(t, second, binary); again != digest {
		t.Fatalf("not reproducible: %s, then %s", digest, again)
	}
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
		t.Fatalf("printed %q", digest)
	}

	layoutFile, err := os.ReadFile(filepath.Join(first, "oci-layout"))
	if err != nil || string(layoutFile) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout: %q (%v)", layoutFile, err)
	}
	indexJSON, err := os.ReadFile(filepath.Join(first, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx index
	if err := json.Unmarshal(indexJSON, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.SchemaVersion != 2 || len(idx.Manifests) != 1 || idx.Manifests[0].Digest != digest ||
		idx.Manifests[0].MediaType != mediaTypeManifest || idx.Manifests[0].Annotations[refNameAnnotation] != "3.10" {
		t.Fatalf("index.json: %s", indexJSON)
	}
	var m manifest
	if err := json.Unmarshal(blob(t, first, idx.Manifests[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m.SchemaVersion != 2 || m.MediaType != mediaTypeManifest || m.Config.MediaType != mediaTypeConfig || len(m.Layers) != 1 || m.Layers[0].MediaType != mediaTypeLayer {
		t.Fatalf("manifest: %+v", m)
	}
	var config imageConfig
	if err := json.Unmarshal(blob(t, first, m.Config), &config); err != nil {
		t.Fatal(err)
	}
	if config.OS != "linux" || config.Config.User != "65535:65535" || len(config.Config.Entrypoint) != 1 || config.Config.Entrypoint[0] != "/pause" || config.RootFS.Type != "layers" || len(config.RootFS.DiffIDs) != 1 {
		t.Fatalf("config: %+v", config)
	}

	// The layer: one file, /pause, 0755, root's, mtime 0, the binary's bytes; its tar's sha256 is the diff ID.
	layer := blob(t, first, m.Layers[0])
	gz, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() && gz.ModTime.Unix() != 0 {
		t.Errorf("gzip header names %q, time %v", gz.Name, gz.ModTime)
	}
	tarBytes, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(tarBytes); "sha256:"+hex.EncodeToString(sum[:]) != config.RootFS.DiffIDs[0] {
		t.Errorf("diff ID %s is not the tar's sha256 %x", config.RootFS.DiffIDs[0], sum)
	}
	tr := tar.NewReader(bytes.NewReader(tarBytes))
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(tr)
	want, _ := os.ReadFile(binary)
	if hdr.Name != "pause" || hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(time.Unix(0, 0)) || !bytes.Equal(content, want) {
		t.Errorf("layer entry: %+v", hdr)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more than one entry in the layer (%v)", err)
	}

	// Every blob is named after its sha256 and is one of the three.
	entries, _ := os.ReadDir(filepath.Join(first, "blobs", "sha256"))
	if len(entries) != 3 {
		t.Errorf("%d blobs, want 3 (no temporary file left)", len(entries))
	}

	// A changed binary changes the digest.
	if err := os.WriteFile(binary, []byte("another binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	if other := image(t, filepath.Join(dir, "c"), binary); other == digest {
		t.Error("a different binary got the same digest")
	}
}

func TestOCIImageRefusesAFolderInUse(t *testing.T) {
	dir := t.TempDir()
	binary := testBinary(t, dir)
	if err := run([]string{"oci-image", dir, binary, "0:0", "x"}, io.Discard); err == nil {
		t.Fatal("wrote an image layout into a folder that holds other files")
	}
	if err := run([]string{"oci-image", filepath.Join(dir, "l"), filepath.Join(dir, "missing"), "0:0", "x"}, io.Discard); err == nil {
		t.Fatal("made an image of a missing binary")
	}
}
