// eva-module: a stand-in for the six EVA module images (eva-forge, eva-gateway, eva-shell,
// eva-whisper, orbit-crm, orbit-itsm). It does what the module contract asks of a module pod and
// nothing more, so that a real pod exercises the contract:
//
//   - environment: NATS_URL (no credentials in it), NATS_CREDS_FILE (a standard .creds file: user JWT
//     and nkey seed; optional here, for testing against a NATS without auth), NATS_INBOX_PREFIX (the
//     only subjects it may subscribe to besides its tenant's), EVA_TENANT_CODE, EVA_MODULE (default:
//     the image's), EVA_HTTP_PORT (default 8080), EVA_CONFIG_FILE (ignored);
//   - HTTP: /livez is always 200; /readyz is 200 only while connected to NATS; the same under
//     /<module>/ (the tenant Ingress's path, which the ingress controller does not strip) answer
//     JSON {"module","tenant","path","ready","status"}, so a caller sees which tenant's module answered;
//   - NATS: connects with the creds file and the inbox prefix and reconnects forever; at start and
//     every 5 s it publishes {"module","tenant","at"} to capsule.<CODE>.events.<module>.heartbeat,
//     as a JetStream publish (the acknowledgement comes back on an inbox under the prefix), or, when
//     no stream acknowledges it, as a plain publish;
//   - logs: one JSON line per state change on stdout;
//   - `seed --version <v>` (the chart's init container) prints what it was asked and exits 0;
//     `version` prints the version; `http-get [--cacert FILE] URL` GETs a URL and exits 0 on 2xx
//     (for probes and tests; the images have no shell or curl); `dial [--timeout 2s] HOST:PORT` opens a
//     TCP connection and exits 0 when it is accepted (e2e/network.test.ts probes the NetworkPolicy with it).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The image sets EVA_MODULE and EVA_MODULE_VERSION (images/module-standin/Containerfile); both can
// also be set at build time (-X main.version=... -X main.defaultModule=...).
var (
	version       = "dev"
	defaultModule = ""
)

func moduleVersion() string {
	if v := os.Getenv("EVA_MODULE_VERSION"); v != "" {
		return v
	}
	return version
}

const heartbeatEvery = 5 * time.Second

type logger struct {
	mu     sync.Mutex
	module string
	tenant string
	last   map[string]string // topic -> last message, so only changes are logged
}

func (l *logger) log(level, msg string, fields ...any) {
	line := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "level": level,
		"module": l.module, "tenant": l.tenant, "msg": msg}
	for i := 0; i+1 < len(fields); i += 2 {
		line[fmt.Sprint(fields[i])] = fields[i+1]
	}
	b, _ := json.Marshal(line)
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(os.Stdout, string(b))
}

// change logs msg only when it differs from the last message logged for topic.
func (l *logger) change(topic, level, msg string, fields ...any) {
	l.mu.Lock()
	if l.last[topic] == msg {
		l.mu.Unlock()
		return
	}
	l.last[topic] = msg
	l.mu.Unlock()
	l.log(level, msg, fields...)
}

func main() {
	args := os.Args[1:]
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		os.Exit(run())
	case "seed":
		os.Exit(seed(args))
	case "version":
		fmt.Printf("%s %s (eva module stand-in)\n", module(), moduleVersion())
	case "http-get":
		os.Exit(httpGet(args))
	case "dial":
		os.Exit(dial(args))
	default:
		fmt.Fprintf(os.Stderr, "usage: eva-module [run] | seed --version V | version | http-get [--cacert FILE] URL | dial [--timeout 2s] HOST:PORT\n")
		os.Exit(2)
	}
}

func module() string {
	if m := os.Getenv("EVA_MODULE"); m != "" {
		return m
	}
	if defaultModule != "" {
		return defaultModule
	}
	return "eva-module"
}

func seed(args []string) int {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	v := fs.String("version", "", "the seeds version to load")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fmt.Printf("%s seed: asked to load seeds version %q for tenant %q (stand-in: nothing to load)\n",
		module(), *v, os.Getenv("EVA_TENANT_CODE"))
	return 0
}

func httpGet(args []string) int {
	fs := flag.NewFlagSet("http-get", flag.ContinueOnError)
	caFile := fs.String("cacert", "", "PEM file of the CA to trust (HTTPS)")
	timeout := fs.Duration("timeout", 5*time.Second, "request timeout")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: eva-module http-get [--cacert FILE] [--timeout 5s] URL")
		return 2
	}
	client := &http.Client{Timeout: *timeout}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fmt.Fprintf(os.Stderr, "no certificate in %s\n", *caFile)
			return 1
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	res, err := client.Get(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	fmt.Printf("%d %s\n", res.StatusCode, strings.TrimSpace(string(body)))
	if res.StatusCode/100 != 2 {
		return 1
	}
	return 0
}

func dial(args []string) int {
	fs := flag.NewFlagSet("dial", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 2*time.Second, "connect timeout")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: eva-module dial [--timeout 2s] HOST:PORT")
		return 2
	}
	conn, err := net.DialTimeout("tcp", fs.Arg(0), *timeout)
	if err != nil {
		fmt.Println("refused:", err)
		return 1
	}
	conn.Close()
	fmt.Println("connected")
	return 0
}

func run() int {
	tenant := os.Getenv("EVA_TENANT_CODE")
	mod := module()
	l := &logger{module: mod, tenant: tenant, last: map[string]string{}}
	natsURL := os.Getenv("NATS_URL")
	creds := os.Getenv("NATS_CREDS_FILE")
	inbox := os.Getenv("NATS_INBOX_PREFIX")
	port := os.Getenv("EVA_HTTP_PORT")
	if port == "" {
		port = "8080"
	}
	var problems []string
	if !regexp.MustCompile(`^[A-Z]{6}$`).MatchString(tenant) {
		problems = append(problems, fmt.Sprintf("EVA_TENANT_CODE must be six uppercase letters, got %q", tenant))
	}
	if natsURL == "" {
		problems = append(problems, "NATS_URL is required")
	} else if strings.Contains(natsURL, "@") {
		problems = append(problems, "NATS_URL must not carry credentials (use NATS_CREDS_FILE)")
	}
	if creds != "" {
		if _, err := os.Stat(creds); err != nil {
			problems = append(problems, fmt.Sprintf("NATS_CREDS_FILE: %v", err))
		}
	}
	if len(problems) > 0 {
		l.log("error", "bad configuration", "problems", problems)
		return 2
	}
	subject := fmt.Sprintf("capsule.%s.events.%s.heartbeat", tenant, mod)

	var connected atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if connected.Load() {
			io.WriteString(w, "ok\n")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "not connected to NATS\n")
	})
	// Through the tenant's Ingress (path /<module>, not stripped by the ingress controller): the same
	// answers as JSON naming who answered, so a caller can tell its tenant's module from another's.
	prefix := "/" + mod
	mux.HandleFunc(prefix+"/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		status, ready := http.StatusOK, connected.Load()
		switch r.PathValue("rest") {
		case "livez":
		case "readyz":
			if !ready {
				status = http.StatusServiceUnavailable
			}
		default:
			status = http.StatusNotFound
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"module": mod, "tenant": tenant, "path": r.URL.Path, "ready": ready, "status": status})
	})
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	httpErr := make(chan error, 1)
	go func() { httpErr <- srv.ListenAndServe() }()
	l.log("info", "serving HTTP", "port", port)

	opts := []nats.Option{
		nats.Name(fmt.Sprintf("%s.%s", mod, tenant)),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(time.Second),
		nats.ConnectHandler(func(nc *nats.Conn) {
			connected.Store(true)
			l.change("nats", "info", "connected to NATS", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			connected.Store(true)
			l.change("nats", "info", "connected to NATS", "url", nc.ConnectedUrlRedacted())
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			connected.Store(false)
			l.change("nats", "warn", "disconnected from NATS", "error", fmt.Sprint(err))
		}),
		nats.ClosedHandler(func(_ *nats.Conn) {
			connected.Store(false)
			l.change("nats", "info", "NATS connection closed")
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			l.change("nats-error", "warn", "NATS error: "+err.Error())
		}),
	}
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	if inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	nc, err := nats.Connect(natsURL, opts...)
	if err != nil {
		l.log("error", "cannot connect to NATS", "error", err.Error())
		return 1
	}
	if nc.IsConnected() {
		connected.Store(true)
		l.change("nats", "info", "connected to NATS", "url", nc.ConnectedUrlRedacted())
	} else {
		l.change("nats", "warn", "not connected to NATS yet; retrying", "url", natsURL)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		l.log("error", "JetStream context", "error", err.Error())
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	beat := func() {
		if !nc.IsConnected() {
			return
		}
		payload, _ := json.Marshal(map[string]string{"module": mod, "tenant": tenant,
			"at": time.Now().UTC().Format(time.RFC3339Nano)})
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ack, err := js.Publish(pctx, subject, payload)
		cancel()
		switch {
		case err == nil:
			l.change("heartbeat", "info", "heartbeats stored", "subject", subject, "stream", ack.Stream)
		case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded):
			if perr := nc.Publish(subject, payload); perr != nil {
				l.change("heartbeat", "warn", "heartbeats failing", "subject", subject, "error", perr.Error())
			} else {
				l.change("heartbeat", "warn", "heartbeats published, no stream acknowledges them", "subject", subject, "error", err.Error())
			}
		default:
			l.change("heartbeat", "warn", "heartbeats failing", "subject", subject, "error", err.Error())
		}
	}
	beat()
	ticker := time.NewTicker(heartbeatEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			beat()
		case err := <-httpErr:
			l.log("error", "HTTP server stopped", "error", err.Error())
			nc.Close()
			return 1
		case <-ctx.Done():
			l.log("info", "stopping")
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(sctx)
			cancel()
			_ = nc.Drain()
			return 0
		}
	}
}
