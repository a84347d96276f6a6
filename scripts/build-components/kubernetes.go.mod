module eva-operator.local/kubernetes-build
go ${GO_TOOLCHAIN}
require k8s.io/kubernetes v${KUBERNETES_VERSION}
replace (
  k8s.io/api => k8s.io/api v${STAGING_VERSION}
  k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v${STAGING_VERSION}
  k8s.io/apimachinery => k8s.io/apimachinery v${STAGING_VERSION}
  k8s.io/apiserver => k8s.io/apiserver v${STAGING_VERSION}
  k8s.io/cli-runtime => k8s.io/cli-runtime v${STAGING_VERSION}
  k8s.io/client-go => k8s.io/client-go v${STAGING_VERSION}
  k8s.io/cloud-provider => k8s.io/cloud-provider v${STAGING_VERSION}
  k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v${STAGING_VERSION}
  k8s.io/code-generator => k8s.io/code-generator v${STAGING_VERSION}
  k8s.io/component-base => k8s.io/component-base v${STAGING_VERSION}
  k8s.io/component-helpers => k8s.io/component-helpers v${STAGING_VERSION}
  k8s.io/controller-manager => k8s.io/controller-manager v${STAGING_VERSION}
  k8s.io/cri-api => k8s.io/cri-api v${STAGING_VERSION}
  k8s.io/cri-client => k8s.io/cri-client v${STAGING_VERSION}
  k8s.io/cri-streaming => k8s.io/cri-streaming v${STAGING_VERSION}
  k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v${STAGING_VERSION}
  k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v${STAGING_VERSION}
  k8s.io/endpointslice => k8s.io/endpointslice v${STAGING_VERSION}
  k8s.io/externaljwt => k8s.io/externaljwt v${STAGING_VERSION}
  k8s.io/kms => k8s.io/kms v${STAGING_VERSION}
  k8s.io/kube-aggregator => k8s.io/kube-aggregator v${STAGING_VERSION}
  k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v${STAGING_VERSION}
  k8s.io/kube-proxy => k8s.io/kube-proxy v${STAGING_VERSION}
  k8s.io/kube-scheduler => k8s.io/kube-scheduler v${STAGING_VERSION}
  k8s.io/kubectl => k8s.io/kubectl v${STAGING_VERSION}
  k8s.io/kubelet => k8s.io/kubelet v${STAGING_VERSION}
  k8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v${STAGING_VERSION}
  k8s.io/metrics => k8s.io/metrics v${STAGING_VERSION}
  k8s.io/mount-utils => k8s.io/mount-utils v${STAGING_VERSION}
  k8s.io/pod-security-admission => k8s.io/pod-security-admission v${STAGING_VERSION}
  k8s.io/sample-apiserver => k8s.io/sample-apiserver v${STAGING_VERSION}
  k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v${STAGING_VERSION}
  k8s.io/sample-controller => k8s.io/sample-controller v${STAGING_VERSION}
  k8s.io/streaming => k8s.io/streaming v${STAGING_VERSION}
)
