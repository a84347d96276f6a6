package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kubeenv"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// sharedClients is what every release shares: one REST config, one discovery held in memory and one
// REST mapper over it, and the capabilities charts render against. The helm CLI builds all of them
// again for each call (discovery alone was 10 requests per tenant).
type sharedClients struct {
	loading   clientcmd.ClientConfigLoadingRules
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	logger    *slog.Logger

	mu           sync.Mutex
	capabilities *common.Capabilities
}

func newSharedClients(logger *slog.Logger) (*sharedClients, error) {
	// KUBECONFIG when set (the operator run beside a cluster), the pod's service account otherwise.
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes configuration: %w", err)
	}
	// helm's own defaults (pkg/cli): its user agent, its retries of transient errors, generous rate limits.
	config.UserAgent = "Helm/" + common.DefaultCapabilities.HelmVersion.Version[1:]
	config.QPS, config.Burst = 100, 200
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &kubeenv.RetryingRoundTripper{Wrapped: rt} })
	client, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(client)
	return &sharedClients{
		loading:   *rules,
		config:    config,
		discovery: cached,
		// Refreshes itself when a kind is not found (a CRD installed since): client-go's deferred mapper
		// resets the cached discovery and asks again once.
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached),
		logger: logger,
	}, nil
}

// forNamespace is the RESTClientGetter one release's action uses: shared clients, the release's namespace.
func (s *sharedClients) forNamespace(namespace string) *namespacedGetter {
	return &namespacedGetter{shared: s, namespace: namespace}
}

// forget drops what discovery cached: the next release discovers the cluster again. Called when a
// release failed on a kind the mapper did not know (a CRD installed since).
func (s *sharedClients) forget() {
	s.discovery.Invalidate()
	s.mapper.Reset()
	s.mu.Lock()
	s.capabilities = nil
	s.mu.Unlock()
}

// capabilitiesOf answers .Capabilities for every chart from one discovery, as helm would per call.
func (s *sharedClients) capabilitiesOf() (*common.Capabilities, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capabilities != nil {
		return s.capabilities, nil
	}
	version, err := s.discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("could not get server version from Kubernetes: %w", err)
	}
	apiVersions, err := action.GetVersionSet(s.discovery)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	s.capabilities = &common.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: common.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}
	return s.capabilities, nil
}

type namespacedGetter struct {
	shared    *sharedClients
	namespace string
}

func (g *namespacedGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.shared.config), nil
}

func (g *namespacedGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.shared.discovery, nil
}

func (g *namespacedGetter) ToRESTMapper() (meta.RESTMapper, error) {
	return restmapper.NewShortcutExpander(g.shared.mapper, g.shared.discovery, nil), nil
}

func (g *namespacedGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	overrides := &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&g.shared.loading, overrides)
}
