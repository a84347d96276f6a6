module eva-operator.local/etcd-build
go ${GO_TOOLCHAIN}
require go.etcd.io/etcd/server/v3 v${ETCD_VERSION}
