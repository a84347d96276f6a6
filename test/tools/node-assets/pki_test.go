package main

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var testNode = nodeSpec{Name: "eva-real-node", IP: net.ParseIP("10.254.0.1"), ServiceIP: net.ParseIP("10.96.0.1"), APIPort: 6443}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s: no CERTIFICATE block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func readKey(t *testing.T, path string) *ecdsa.PrivateKey {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		t.Fatalf("%s: no EC PRIVATE KEY block", path)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func TestPKI(t *testing.T) {
	state := t.TempDir()
	pkiDir := filepath.Join(state, "pki")
	if err := writePKI(pkiDir, state, testNode); err != nil {
		t.Fatal(err)
	}

	ca := readCert(t, filepath.Join(pkiDir, "ca.crt"))
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign || ca.Subject.CommonName != "eva-real-node-ca" {
		t.Errorf("CA: IsCA %v, key usage %v, subject %v", ca.IsCA, ca.KeyUsage, ca.Subject)
	}
	if err := ca.CheckSignatureFrom(ca); err != nil {
		t.Errorf("the CA is not self-signed: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	// The ServiceAccount keys: a pair.
	saKey := readKey(t, filepath.Join(pkiDir, "sa.key"))
	pubPEM, err := os.ReadFile(filepath.Join(pkiDir, "sa.pub"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pubPEM)
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil || !saKey.PublicKey.Equal(pub) {
		t.Errorf("sa.pub is not sa.key's public key (%v)", err)
	}

	files := []string{"ca.key", "ca.crt", "sa.key", "sa.pub"}
	for _, spec := range certSpecs(testNode) {
		files = append(files, spec.File+".key", spec.File+".crt")
		cert := readCert(t, filepath.Join(pkiDir, spec.File+".crt"))
		opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{spec.Usage}}
		if spec.Usage == x509.ExtKeyUsageServerAuth {
			opts.DNSName = "kubernetes.default.svc"
		}
		if _, err := cert.Verify(opts); err != nil {
			t.Errorf("%s does not verify against the CA for its usage: %v", spec.File, err)
		}
		other := x509.ExtKeyUsageServerAuth
		if spec.Usage == other {
			other = x509.ExtKeyUsageClientAuth
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{other}}); err == nil {
			t.Errorf("%s verifies for a usage it was not given (%v)", spec.File, other)
		}
		if cert.IsCA || !cert.BasicConstraintsValid || cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
			t.Errorf("%s: IsCA %v, key usage %v", spec.File, cert.IsCA, cert.KeyUsage)
		}
		wantO := []string{}
		if spec.O != "" {
			wantO = []string{spec.O}
		}
		if cert.Subject.CommonName != spec.CN || !slices.Equal(append([]string{}, cert.Subject.Organization...), wantO) {
			t.Errorf("%s: subject %v, want CN=%s O=%v", spec.File, cert.Subject, spec.CN, wantO)
		}
		if !readKey(t, filepath.Join(pkiDir, spec.File+".key")).PublicKey.Equal(cert.PublicKey) {
			t.Errorf("%s.key is not the key of %s.crt", spec.File, spec.File)
		}
	}

	api := readCert(t, filepath.Join(pkiDir, "apiserver.crt"))
	for _, ip := range []string{"10.254.0.1", "10.96.0.1", "127.0.0.1"} {
		if err := api.VerifyHostname(ip); err != nil {
			t.Errorf("apiserver.crt: %v", err)
		}
	}
	for _, name := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc.cluster.local", "localhost"} {
		if err := api.VerifyHostname(name); err != nil {
			t.Errorf("apiserver.crt: %v", err)
		}
	}
	if err := api.VerifyHostname("10.254.0.2"); err == nil {
		t.Error("apiserver.crt is valid for an address it does not name")
	}
	if kubelet := readCert(t, filepath.Join(pkiDir, "kubelet.crt")); kubelet.Subject.CommonName != "system:node:eva-real-node" {
		t.Errorf("kubelet.crt: CN %q", kubelet.Subject.CommonName)
	}

	// Exactly these files, keys 0600.
	entries, err := os.ReadDir(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(files)
	if !slices.Equal(got, files) {
		t.Errorf("pki files: %v, want %v", got, files)
	}
	for _, f := range files {
		want := os.FileMode(0o644)
		if filepath.Ext(f) == ".key" {
			want = 0o600
		}
		if m := mode(t, filepath.Join(pkiDir, f)); m != want {
			t.Errorf("%s: mode %v, want %v", f, m, want)
		}
	}

	// Each kubeconfig: the server, the CA and its identity's pair, 0600.
	for _, kc := range kubeconfigs {
		path := filepath.Join(state, kc[0])
		if m := mode(t, path); m != 0o600 {
			t.Errorf("%s: mode %v", kc[0], m)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var config kubeconfig
		if err := json.Unmarshal(data, &config); err != nil {
			t.Fatalf("%s: %v", kc[0], err)
		}
		crt, _ := os.ReadFile(filepath.Join(pkiDir, kc[1]+".crt"))
		key, _ := os.ReadFile(filepath.Join(pkiDir, kc[1]+".key"))
		caPEM, _ := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
		if len(config.Clusters) != 1 || config.Clusters[0].Cluster.Server != "https://10.254.0.1:6443" ||
			string(config.Clusters[0].Cluster.CertificateAuthorityData) != string(caPEM) ||
			len(config.Users) != 1 || config.Users[0].Name != kc[1] ||
			string(config.Users[0].User.ClientCertificateData) != string(crt) || string(config.Users[0].User.ClientKeyData) != string(key) ||
			config.CurrentContext != "eva-real-node" || len(config.Contexts) != 1 || config.Contexts[0].Context.User != kc[1] {
			t.Errorf("%s: %s", kc[0], data)
		}
	}
}

// The negative control: a certificate of another node's CA does not verify against this one.
func TestPKIOfAnotherCADoesNotVerify(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if err := writePKI(filepath.Join(dir, "pki"), dir, testNode); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(a, "pki", "ca.crt")))
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := readCert(t, filepath.Join(a, "pki", "admin.crt")).Verify(opts); err != nil {
		t.Fatalf("the positive case fails: %v", err)
	}
	if _, err := readCert(t, filepath.Join(b, "pki", "admin.crt")).Verify(opts); err == nil {
		t.Fatal("a certificate of another CA verifies")
	}
}

func TestPKIArguments(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"pki", "--node-name", "n", "--node-ip", "10.0.0.1", "--service-ip", "10.96.0.1", "--api-port", "6443", dir},
		{"pki", "--node-name", "n", "--node-ip", "not-an-ip", "--service-ip", "10.96.0.1", "--api-port", "6443", dir, dir},
		{"pki", "--node-ip", "10.0.0.1", "--service-ip", "10.96.0.1", "--api-port", "6443", dir, dir},
		{"pki", "--node-name", "n", "--node-ip", "10.0.0.1", "--service-ip", "10.96.0.1", "--api-port", "0", dir, dir},
	} {
		if err := run(args, os.Stdout); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
