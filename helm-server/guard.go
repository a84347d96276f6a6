package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// guardTicket names the render guard the operator serves (src/steps/render-guard/render-guard-server.ts) and the
// one-time token it registered for this release with the release's policy. The policy never leaves
// the operator: this process holds only the token.
type guardTicket struct {
	Socket string `json:"socket"`
	Token  string `json:"token"`
}

// guardPostRenderer is helm's post-renderer for a guarded release: it sends the rendered manifests
// to the render guard and returns exactly what the guard allowed, or fails, and helm applies nothing.
// The exchange is the one the guard's CLI plugin speaks (helm-plugins/eva-render-guard).
type guardPostRenderer struct {
	ticket guardTicket
}

const guardTimeout = 120 * time.Second

func (g *guardPostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	conn, err := net.DialTimeout("unix", g.ticket.Socket, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("the render guard is not answering: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(guardTimeout))
	// No client process: nothing spent on a CPU before the request (the guard logs the cost). The
	// documents go as JSON lines when helm's own YAML reader converts them (what helm applies is what
	// the guard reads, and JSON is cheap to read), else as helm rendered them.
	body, format := asJSONLines(rendered.Bytes())
	if _, err := fmt.Fprintf(conn, "%s 0 0 %s\n", g.ticket.Token, format); err != nil {
		return nil, err
	}
	if _, err := conn.Write(body); err != nil {
		return nil, err
	}
	if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
		return nil, err
	}
	return readVerdict(bufio.NewReader(conn))
}

// readVerdict reads `allow <n>\n<n bytes>` (all of them, or it fails) or `refuse\n<why>\n`.
func readVerdict(reply *bufio.Reader) (*bytes.Buffer, error) {
	head, err := reply.ReadString('\n')
	if err != nil {
		return nil, errors.New("the render guard ended without a verdict")
	}
	head = strings.TrimSuffix(head, "\n")
	if head == "refuse" {
		why, _ := reply.ReadString('\n')
		return nil, fmt.Errorf("the render guard refused the release: %s", strings.TrimSpace(why))
	}
	size, ok := strings.CutPrefix(head, "allow ")
	n, convErr := strconv.Atoi(size)
	if !ok || convErr != nil || n < 0 {
		return nil, errors.New("the render guard sent no verdict it speaks")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(reply, body); err != nil {
		return nil, errors.New("the render guard's reply was cut short")
	}
	return bytes.NewBuffer(body), nil
}

// asJSONLines splits the rendered stream as helm's kube client does and converts each document with
// the YAML reader helm applies with (strict: a duplicate key is an error), one JSON document per line;
// empty documents are dropped. Anything it cannot convert goes to the guard as it came, in YAML.
func asJSONLines(rendered []byte) ([]byte, string) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rendered)))
	var out bytes.Buffer
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out.Bytes(), "json-lines"
		}
		if err != nil {
			return rendered, "yaml"
		}
		converted, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return rendered, "yaml"
		}
		if trimmed := bytes.TrimSpace(converted); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
			continue
		}
		out.Write(converted)
		out.WriteByte('\n')
	}
}
