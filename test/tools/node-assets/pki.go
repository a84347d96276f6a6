package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// nodeSpec: what the certificates and kubeconfigs name of the node.
type nodeSpec struct {
	Name      string
	IP        net.IP
	ServiceIP net.IP
	APIPort   int
}

// certSpec: one identity of the cluster, written as <File>.key and <File>.crt.
type certSpec struct {
	File  string
	CN    string
	O     string // "" for none
	Usage x509.ExtKeyUsage
	DNS   []string
	IPs   []net.IP
}

// A fresh CA for every node: ten years, as long as a test or a developer's node could want.
const validity = 3650 * 24 * time.Hour

// certSpecs: every certificate the node's processes present. The API server's names are those an
// in-cluster client (the `kubernetes` Service) or a client on the node uses.
func certSpecs(n nodeSpec) []certSpec {
	return []certSpec{
		{File: "apiserver", CN: "kube-apiserver", Usage: x509.ExtKeyUsageServerAuth,
			DNS: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
			IPs: []net.IP{n.IP, n.ServiceIP, net.IPv4(127, 0, 0, 1)}},
		{File: "apiserver-kubelet-client", CN: "kube-apiserver-kubelet-client", O: "system:masters", Usage: x509.ExtKeyUsageClientAuth},
		{File: "admin", CN: "eva-admin", O: "system:masters", Usage: x509.ExtKeyUsageClientAuth},
		{File: "controller-manager", CN: "system:kube-controller-manager", Usage: x509.ExtKeyUsageClientAuth},
		{File: "scheduler", CN: "system:kube-scheduler", Usage: x509.ExtKeyUsageClientAuth},
		{File: "kubelet", CN: "system:node:" + n.Name, O: "system:nodes", Usage: x509.ExtKeyUsageClientAuth},
		{File: "kube-proxy", CN: "system:kube-proxy", Usage: x509.ExtKeyUsageClientAuth},
		{File: "kube-router", CN: "system:kube-router", Usage: x509.ExtKeyUsageClientAuth},
	}
}

// kubeconfigs: file name in the kubeconfig folder -> the identity (certSpec.File) it uses.
var kubeconfigs = [][2]string{
	{"kubeconfig", "admin"},
	{"controller-manager.kubeconfig", "controller-manager"},
	{"scheduler.kubeconfig", "scheduler"},
	{"kubelet.kubeconfig", "kubelet"},
	{"kube-proxy.kubeconfig", "kube-proxy"},
	{"kube-router.kubeconfig", "kube-router"},
}

// writePKI writes ca.key/ca.crt, sa.key/sa.pub (the ServiceAccount token keys) and every identity's
// .key/.crt into pkiDir, and the kubeconfigs into kubeconfigDir. Keys and kubeconfigs are 0600.
func writePKI(pkiDir, kubeconfigDir string, n nodeSpec) error {
	for _, dir := range []string{pkiDir, kubeconfigDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	caKey, err := newKey()
	if err != nil {
		return err
	}
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "eva-real-node-ca"},
		BasicConstraintsValid: true,
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := sign(caTemplate, caTemplate, caKey, caKey)
	if err != nil {
		return fmt.Errorf("the CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeKeyPair(pkiDir, "ca", caKey, caDER); err != nil {
		return err
	}

	saKey, err := newKey()
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(pkiDir, "sa.key"), saKey); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(pkiDir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}), 0o644); err != nil {
		return err
	}

	for _, spec := range certSpecs(n) {
		key, err := newKey()
		if err != nil {
			return err
		}
		subject := pkix.Name{CommonName: spec.CN}
		if spec.O != "" {
			subject.Organization = []string{spec.O}
		}
		der, err := sign(&x509.Certificate{
			Subject:               subject,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:           []x509.ExtKeyUsage{spec.Usage},
			DNSNames:              spec.DNS,
			IPAddresses:           spec.IPs,
		}, ca, key, caKey)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.File, err)
		}
		if err := writeKeyPair(pkiDir, spec.File, key, der); err != nil {
			return err
		}
	}

	server := "https://" + net.JoinHostPort(n.IP.String(), strconv.Itoa(n.APIPort))
	for _, kc := range kubeconfigs {
		if err := writeKubeconfig(filepath.Join(kubeconfigDir, kc[0]), pkiDir, kc[1], server); err != nil {
			return err
		}
	}
	return nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// sign fills in what every certificate has (a random serial, the validity) and signs it with ECDSA-SHA256.
func sign(template, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now()
	template.NotAfter = template.NotBefore.Add(validity)
	template.SignatureAlgorithm = x509.ECDSAWithSHA256
	return x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
}

func writeKeyPair(dir, name string, key *ecdsa.PrivateKey, der []byte) error {
	if err := writeKey(filepath.Join(dir, name+".key"), key); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// writeKey: SEC 1 ("EC PRIVATE KEY"), as `openssl ecparam -genkey` writes and every Kubernetes
// component reads.
func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// kubeconfig: the fields of client-go's clientcmd v1 Config that the node uses. []byte fields are
// base64 in JSON, as the *-data fields want; a JSON kubeconfig is YAML, read by kubectl and helm alike.
type kubeconfig struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
}

type namedCluster struct {
	Name    string `json:"name"`
	Cluster struct {
		Server                   string `json:"server"`
		CertificateAuthorityData []byte `json:"certificate-authority-data"`
	} `json:"cluster"`
}

type namedUser struct {
	Name string `json:"name"`
	User struct {
		ClientCertificateData []byte `json:"client-certificate-data"`
		ClientKeyData         []byte `json:"client-key-data"`
	} `json:"user"`
}

type namedContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster string `json:"cluster"`
		User    string `json:"user"`
	} `json:"context"`
}

const clusterName = "eva-real-node"

func writeKubeconfig(path, pkiDir, identity, server string) error {
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(pkiDir, name)) }
	caPEM, err := read("ca.crt")
	if err != nil {
		return err
	}
	certPEM, err := read(identity + ".crt")
	if err != nil {
		return err
	}
	keyPEM, err := read(identity + ".key")
	if err != nil {
		return err
	}
	var cluster namedCluster
	cluster.Name = clusterName
	cluster.Cluster.Server = server
	cluster.Cluster.CertificateAuthorityData = caPEM
	var user namedUser
	user.Name = identity
	user.User.ClientCertificateData = certPEM
	user.User.ClientKeyData = keyPEM
	var context namedContext
	context.Name = clusterName
	context.Context.Cluster = clusterName
	context.Context.User = identity
	data, err := json.MarshalIndent(kubeconfig{
		APIVersion: "v1", Kind: "Config",
		Clusters: []namedCluster{cluster}, Users: []namedUser{user}, Contexts: []namedContext{context},
		CurrentContext: clusterName,
	}, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, append(data, '\n'), 0o600)
}

// writeFile writes under a temporary name (created 0600) and renames when complete, so a reader
// never sees half a file and a key is never readable by others, not even for a moment.
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
