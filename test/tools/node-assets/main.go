// Command node-assets makes the files of scripts/lib/real-node.sh that are data, not processes: the
// node's keys, certificates and kubeconfigs, and the one-binary OCI images of its pause and Traefik
// pods. Go's standard library only (crypto/x509, archive/tar, compress/gzip, encoding/json), so every
// value (a name, an address, a user) is data in a struct, never text spliced into a command or a file.
//
// Usage:
//
//	node-assets pki --node-name N --node-ip IP --service-ip IP --api-port PORT <pki dir> <kubeconfig dir>
//	node-assets oci-image <layout dir> <binary> <user> <ref name>   -> prints the manifest digest
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
)

const usage = `usage:
  node-assets pki --node-name N --node-ip IP --service-ip IP --api-port PORT <pki dir> <kubeconfig dir>
  node-assets oci-image <layout dir> <binary> <user> <ref name>`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "node-assets: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch args[0] {
	case "pki":
		fs := flag.NewFlagSet("pki", flag.ContinueOnError)
		nodeName := fs.String("node-name", "", "the node's name (the kubelet's identity system:node:<name>)")
		nodeIP := fs.String("node-ip", "", "the node's address (API server certificate, kubeconfigs)")
		serviceIP := fs.String("service-ip", "", "the `kubernetes` Service's ClusterIP (API server certificate)")
		apiPort := fs.Int("api-port", 0, "the API server's port (kubeconfigs)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 2 || *nodeName == "" || *apiPort <= 0 || *apiPort > 65535 {
			return fmt.Errorf("pki needs --node-name, --node-ip, --service-ip, --api-port and two folders\n%s", usage)
		}
		node, service := net.ParseIP(*nodeIP), net.ParseIP(*serviceIP)
		if node == nil || service == nil {
			return fmt.Errorf("--node-ip %q and --service-ip %q must be IP addresses", *nodeIP, *serviceIP)
		}
		return writePKI(fs.Arg(0), fs.Arg(1), nodeSpec{Name: *nodeName, IP: node, ServiceIP: service, APIPort: *apiPort})
	case "oci-image":
		if len(args) != 5 {
			return fmt.Errorf("oci-image needs four arguments\n%s", usage)
		}
		digest, err := writeImage(args[1], args[2], args[3], args[4])
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, digest)
		return err
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
}
