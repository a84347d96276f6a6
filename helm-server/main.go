// eva-helm-server: the Helm SDK (the library the helm CLI and Flux's helm-controller are built from)
// in one long-lived process beside the operator, so a release costs no process start, no chart read
// from disk and no discovery of the cluster. The operator starts it, speaks HTTP to it over a unix
// socket in a private folder (mode 0700) and ends it by closing its standard input.
//
// Release records are helm's own (the secrets driver), so `helm list` and `helm history` keep working.
// Secret values reach it only as paths of values files on the operator's tmpfs, never as arguments.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/kube"
)

func main() {
	socket := flag.String("socket", "", "the unix socket to listen on (its folder must exist and be private)")
	flag.Parse()
	// Warnings and errors only: the operator logs each line it gets, and reports each operation itself.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(*socket, logger); err != nil {
		logger.Error("helm server stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(socket string, logger *slog.Logger) error {
	if socket == "" || !filepath.IsAbs(socket) {
		return errors.New("--socket must be an absolute path")
	}
	if info, err := os.Stat(filepath.Dir(socket)); err != nil || info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("the socket's folder must exist and be private (mode 0700): %s", filepath.Dir(socket))
	}
	// The helm CLI's field manager (it is named after the binary): objects move between this process,
	// an operator version that runs the CLI and a user's `helm rollback` without apply conflicts.
	kube.ManagedFieldsManager = "helm"
	clients, err := newSharedClients(logger)
	if err != nil {
		return err
	}
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// Every operation's context ends with the server's: a stopping server cancels what it runs (helm
	// marks the release failed where it can) rather than finishing it with no operator to report to.
	server := &http.Server{
		Handler:           newHandler(clients, logger),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		// The operator holds our standard input: when it ends (the operator exited or was killed) so do we.
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	go func() {
		<-ctx.Done()
		// A release left pending is unlocked by the operator's next pass (steps/modules/release-state.ts).
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	// One line on stdout tells the operator the socket is ready.
	fmt.Println("ready")
	err = server.Serve(listener)
	// The listener removed its socket; the folder the operator made for it goes too (if it is empty),
	// also when the operator died first and cannot.
	_ = os.Remove(filepath.Dir(socket))
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
