package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/kube"
	ri "helm.sh/helm/v4/pkg/release"
	"helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
)

// upgradeInstall is `helm upgrade --install` as the operator calls it (src/adapters/helm.ts).
type upgradeInstall struct {
	Release        string            `json:"release"`
	Namespace      string            `json:"namespace"`
	Chart          string            `json:"chart"`
	ValuesFiles    []string          `json:"valuesFiles"`
	Labels         map[string]string `json:"labels"`
	TimeoutSeconds int               `json:"timeoutSeconds"`
	Wait           bool              `json:"wait"`
	HistoryMax     int               `json:"historyMax"`
	// FirstInstall: the operator read helm's records of the release just now and found none, so this
	// installs without reading them again (a record made meanwhile fails the install: retried).
	FirstInstall bool         `json:"firstInstall"`
	Guard        *guardTicket `json:"guard"`
}

type uninstallRequest struct {
	Release        string `json:"release"`
	Namespace      string `json:"namespace"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	Wait           bool   `json:"wait"`
}

type releaseRef struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
}

// historyEntry and releaseStatus are what `helm history -o json` and `helm status -o json` print
// (the parts the operator reads), so the operator parses one shape whichever runs helm.
type historyEntry struct {
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
	Chart       string `json:"chart"`
	AppVersion  string `json:"app_version"`
	Description string `json:"description"`
}

type releaseStatus struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Info      struct {
		Status      string `json:"status"`
		Description string `json:"description"`
	} `json:"info"`
}

type releases struct {
	clients *sharedClients
	schemas *valuesSchemas
	logger  *slog.Logger
}

// configuration is helm's action configuration for one namespace: its own release storage (helm's
// Secrets there), the shared clients and the shared capabilities.
func (r *releases) configuration(namespace string) (*action.Configuration, error) {
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(r.logger.Handler()))
	if err := cfg.Init(r.clients.forNamespace(namespace), namespace, "secret"); err != nil {
		return nil, err
	}
	kc, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		return nil, fmt.Errorf("unexpected helm kube client %T", cfg.KubeClient)
	}
	kc.Namespace = namespace
	capabilities, err := r.clients.capabilitiesOf()
	if err != nil {
		return nil, err
	}
	cfg.Capabilities = capabilities
	cfg.KubeClient = reachableClient{kc}
	return cfg, nil
}

// reachableClient is helm's kube client without its reachability probe: each action asks
// GET /version first (one request per release). The capabilities above came from the server, and a
// server gone since fails the action's own requests with their error.
type reachableClient struct{ *kube.Client }

func (reachableClient) IsReachable() error { return nil }

func (r *releases) upgradeInstall(ctx context.Context, req upgradeInstall) error {
	cfg, err := r.configuration(req.Namespace)
	if err != nil {
		return err
	}
	// As the CLI: values merged from the files in order (later wins); the chart read from its folder.
	vals, err := (&values.Options{ValueFiles: req.ValuesFiles}).MergeValues(getter.Providers{})
	if err != nil {
		return err
	}
	chart, err := loader.Load(req.Chart)
	if err != nil {
		return err
	}
	// The values schema checked here, compiled once (schema.go). Without values an upgrade renders
	// the last release's, and another chart API version is not schema.go's: helm's own check stays on.
	v2, checked := chart.(*chartv2.Chart)
	if checked = checked && len(vals) > 0; checked {
		if err := r.schemas.check(v2, vals); err != nil {
			return err
		}
	}
	timeout := time.Duration(req.TimeoutSeconds) * time.Second
	wait := kube.HookOnlyStrategy
	if req.Wait {
		wait = kube.StatusWatcherStrategy
	}
	var post *guardPostRenderer
	if req.Guard != nil {
		post = &guardPostRenderer{ticket: *req.Guard}
	}
	installing, uninstalled := true, false
	if !req.FirstInstall {
		if installing, uninstalled, err = r.absentOrUninstalled(cfg, req.Release); err != nil {
			return err
		}
	}
	if installing {
		if req.FirstInstall {
			cfg.Releases.Driver = noRecordsYet{cfg.Releases.Driver}
		}
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = req.Release, req.Namespace
		install.Timeout, install.WaitStrategy = timeout, wait
		install.Labels = req.Labels
		install.DisableOpenAPIValidation = true
		install.SkipSchemaValidation = checked
		install.ServerSideApply = true
		install.Replace = uninstalled // reuses the name of an uninstalled release kept in history, as the CLI does
		if post != nil {
			install.PostRenderer = post
		}
		_, err = install.RunWithContext(ctx, chart, vals)
		return r.mapped(err)
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = req.Namespace
	upgrade.Timeout, upgrade.WaitStrategy = timeout, wait
	upgrade.Labels = req.Labels
	upgrade.MaxHistory = req.HistoryMax
	upgrade.DisableOpenAPIValidation = true
	upgrade.SkipSchemaValidation = checked
	upgrade.ServerSideApply = "auto"
	if post != nil {
		upgrade.PostRenderer = post
	}
	_, err = upgrade.RunWithContext(ctx, req.Release, chart, vals)
	return r.mapped(err)
}

// noRecordsYet is helm's release storage for a first install: its check that the name is free (a LIST
// of the name's records) answers none, as the operator found a moment ago (or the namespace is new).
// Writing revision 1's record still creates it, so a release installed meanwhile makes this one fail
// with AlreadyExists before anything is applied: the API server enforces what the LIST only read.
type noRecordsYet struct{ driver.Driver }

func (noRecordsYet) Query(map[string]string) ([]ri.Releaser, error) {
	return nil, driver.ErrReleaseNotFound
}

// absentOrUninstalled decides install or upgrade as `helm upgrade --install` does: from the latest revision.
// The second answer says the release was uninstalled with its history kept.
func (r *releases) absentOrUninstalled(cfg *action.Configuration, name string) (install, uninstalled bool, err error) {
	versions, err := action.NewHistory(cfg).Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) || (err == nil && len(versions) == 0) {
		return true, false, nil
	}
	if err != nil {
		return false, false, err
	}
	var last *releasev1.Release
	for _, version := range versions {
		rel, err := asV1(version)
		if err != nil {
			return false, false, err
		}
		if last == nil || rel.Version > last.Version {
			last = rel
		}
	}
	uninstalled = last.Info.Status == common.StatusUninstalled
	return uninstalled, uninstalled, nil
}

func (r *releases) uninstall(req uninstallRequest) error {
	cfg, err := r.configuration(req.Namespace)
	if err != nil {
		return err
	}
	uninstall := action.NewUninstall(cfg)
	uninstall.IgnoreNotFound = true
	uninstall.DisableHooks = true
	uninstall.Timeout = time.Duration(req.TimeoutSeconds) * time.Second
	uninstall.WaitStrategy = kube.HookOnlyStrategy
	if req.Wait {
		uninstall.WaitStrategy = kube.StatusWatcherStrategy
	}
	_, err = uninstall.Run(req.Release)
	return r.mapped(err)
}

func (r *releases) history(req releaseRef) ([]historyEntry, error) {
	cfg, err := r.configuration(req.Namespace)
	if err != nil {
		return nil, err
	}
	found, err := action.NewHistory(cfg).Run(req.Release)
	if err != nil {
		return nil, err
	}
	entries := make([]historyEntry, 0, len(found))
	for _, item := range found {
		rel, err := asV1(item)
		if err != nil {
			return nil, err
		}
		entries = append(entries, historyEntry{
			Revision: rel.Version, Status: rel.Info.Status.String(), Chart: chartName(rel.Chart),
			AppVersion: appVersion(rel.Chart), Description: rel.Info.Description,
		})
	}
	sortByRevision(entries)
	return entries, nil
}

func (r *releases) status(req releaseRef) (*releaseStatus, error) {
	cfg, err := r.configuration(req.Namespace)
	if err != nil {
		return nil, err
	}
	found, err := action.NewStatus(cfg).Run(req.Release)
	if err != nil {
		return nil, err
	}
	rel, err := asV1(found)
	if err != nil {
		return nil, err
	}
	status := &releaseStatus{Name: rel.Name, Namespace: rel.Namespace, Version: rel.Version}
	status.Info.Status, status.Info.Description = rel.Info.Status.String(), rel.Info.Description
	return status, nil
}

// mapped forgets discovery when the cluster named a kind the cached mapper did not know: a CRD
// installed after the last discovery. The release fails this once; the operator's retry discovers anew.
func (r *releases) mapped(err error) error {
	if err != nil && isNoMatch(err) {
		r.clients.forget()
	}
	return err
}

func asV1(rel ri.Releaser) (*releasev1.Release, error) {
	switch r := rel.(type) {
	case *releasev1.Release:
		return r, nil
	case releasev1.Release:
		return &r, nil
	default:
		return nil, fmt.Errorf("unsupported release type %T", rel)
	}
}

func chartName(c *chartv2.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return fmt.Sprintf("%s-%s", c.Name(), c.Metadata.Version)
}

func appVersion(c *chartv2.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return c.AppVersion()
}

func isNoMatch(err error) bool {
	text := err.Error()
	return meta.IsNoMatchError(err) || strings.Contains(text, "resource mapping not found") || strings.Contains(text, "no matches for kind")
}

func sortByRevision(entries []historyEntry) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Revision < entries[j].Revision })
}
