package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// The API the operator speaks (src/adapters/helm.ts), one JSON request per call:
//
//	POST /v1/upgrade-install  upgradeInstall      -> 204, or an error
//	POST /v1/uninstall        uninstallRequest    -> 204, or an error
//	POST /v1/history          releaseRef          -> [historyEntry], 404 when there is no such release
//	POST /v1/status           releaseRef          -> releaseStatus, 404 when there is no such release
//	GET  /healthz                                 -> 200
//
// An error is `{"error": "<helm's message>"}` with 404 (no such release), 499 (the operator gave up
// and the operation was cancelled) or 500.
func newHandler(clients *sharedClients, logger *slog.Logger) http.Handler {
	r := &releases{clients: clients, schemas: newValuesSchemas(), logger: logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /v1/upgrade-install", handle(func(ctx context.Context, req upgradeInstall) (any, error) {
		return nil, r.upgradeInstall(ctx, req)
	}))
	mux.HandleFunc("POST /v1/uninstall", handle(func(_ context.Context, req uninstallRequest) (any, error) {
		return nil, r.uninstall(req)
	}))
	mux.HandleFunc("POST /v1/history", handle(func(_ context.Context, req releaseRef) (any, error) { return r.history(req) }))
	mux.HandleFunc("POST /v1/status", handle(func(_ context.Context, req releaseRef) (any, error) { return r.status(req) }))
	return mux
}

const maxRequestBytes = 1 << 20

func handle[Req any](op func(context.Context, Req) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, httpReq *http.Request) {
		var req Req
		decoder := json.NewDecoder(http.MaxBytesReader(w, httpReq.Body, maxRequestBytes))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, "the request is not one this server speaks: "+err.Error())
			return
		}
		result, err := op(httpReq.Context(), req)
		switch {
		case err == nil && result == nil:
			w.WriteHeader(http.StatusNoContent)
		case err == nil:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(result)
		case errors.Is(err, driver.ErrReleaseNotFound):
			writeError(w, http.StatusNotFound, err.Error())
		case errors.Is(httpReq.Context().Err(), context.Canceled):
			writeError(w, 499, err.Error())
		default:
			writeError(w, http.StatusInternalServerError, err.Error())
		}
	}
}

func writeError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": message})
}
