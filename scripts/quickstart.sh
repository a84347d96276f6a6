#!/usr/bin/env bash
# Bootstrap eva-operator and provision one tenant, end to end: on this machine (--local) or in an
# existing cluster (the current kubectl context).
#
#   scripts/quickstart.sh --local [--code CODE] [--tier TIER] [--wave N] [--timeout SECONDS]
#   scripts/quickstart.sh [--namespace NS] [--release NAME] [--values FILE] [--dry-run] [--code ...]
#   scripts/quickstart.sh --air-gap --registry HOST[:PORT][/PREFIX] [--dry-run] [...]
#
# The five steps: 1 preflight, 2 install the CRD, 3 install (or start) the operator, 4 create the
# EvaTenant, 5 wait for Active, printing each condition as it turns True (with the time since
# waiting started) and the reason and message of one that is False.
#
#   --local       build (once) and start the local control plane and NATS, install the CRD, run the
#                 operator as a local process (no container engine needed), create an EvaTenant and
#                 wait until it is Active
#   without --local: install into the cluster of the current kubectl context, with kubectl and helm
#                 from PATH: 1 kubectl and helm present, the cluster reachable, the permissions, and the
#                 installed EvaTenant CRD compared with crds/ (older: upgraded; same; newer: refused,
#                 never downgraded); 2 kubectl apply --server-side of crds/, stamped with the annotation
#                 eva.aidonow.com/crd-version (the chart's appVersion); 3 helm upgrade --install of
#                 charts/eva-operator (--skip-crds), waiting until its Deployment is Available; a
#                 quick-start NATS in the namespace unless --values configures NATS; 4 an EvaTenant
#                 pinned to the version the live Deployment runs (its eva.aidonow.com/operator-version
#                 annotation); 5 wait for Active
#   --namespace   the operator's namespace, created if absent (default eva-system)
#   --release     the Helm release name (default eva-operator)
#   --values      a file of extra chart values (helm -f); they override the quickstart's defaults
#   --dry-run     change nothing in the cluster: server-side dry run of the CRD, `helm template` instead
#                 of an install, print the EvaTenant that would be created
#   --air-gap     pull nothing from a public registry: every image the chart deploys (the operator,
#                 the quick-start NATS) comes from --registry by the digest images.txt pins, and the
#                 chart's airGapRegistry makes the operator rewrite module images the same way. A
#                 PLACEHOLDER digest fails, naming the image (with --dry-run: shown by tag, warned)
#   --registry    the mirror scripts/mirror-images.sh filled, HOST[:PORT][/PREFIX] (with --air-gap only)
#   --code        capsule code of the tenant to create (six uppercase letters; default DEMOCO)
#   --tier        Starter | Customer | Enterprise | Platform (default Starter)
#   --wave        1..3 (default 1)
#   --timeout     seconds to wait for the operator Deployment, and for Active (default 300)
#   IMAGES_FILE   the digest-pinned image list --air-gap reads (default: images.txt of this checkout)
#
# Exit status: 0 done (with --dry-run: shown, nothing changed); 1 failed (the reason on stderr);
# 2 usage error.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }
step() { printf '\n==> [%s/5] %s\n' "$1" "$2"; }
die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }
usage_error() { printf 'quickstart: %s (try --help)\n' "$*" >&2; exit 2; }

local_mode=false code=DEMOCO tier=Starter wave=1 timeout=300
namespace=eva-system release=eva-operator values_file="" registry="" air_gap=false dry_run=false
cluster_only=()   # the cluster-install options given, refused with --local
while (($#)); do
  option=$1 value="" has_value=false
  if [[ $option == --*=* ]]; then value=${option#*=} option=${option%%=*} has_value=true; fi
  case "$option" in
    --code | --tier | --wave | --timeout | --namespace | --release | --values | --registry)
      if ! $has_value; then
        [[ $# -ge 2 && -n $2 && $2 != --* ]] || usage_error "$option needs a value"
        value=$2
        shift
      fi
      [[ -n $value ]] || usage_error "$option needs a value" ;;
    --local | --air-gap | --dry-run | -h | --help)
      $has_value && usage_error "$option takes no value" ;;
    *) usage_error "unknown option $1" ;;
  esac
  case "$option" in
    --local) local_mode=true ;;
    --code) code=$value ;;
    --tier) tier=$value ;;
    --wave) wave=$value ;;
    --timeout) timeout=$value ;;
    --namespace) namespace=$value cluster_only+=("$option") ;;
    --release) release=$value cluster_only+=("$option") ;;
    --values) values_file=$value cluster_only+=("$option") ;;
    --registry) registry=${value%/} cluster_only+=("$option") ;;
    --air-gap) air_gap=true cluster_only+=("$option") ;;
    --dry-run) dry_run=true cluster_only+=("$option") ;;
    -h | --help) usage; exit 0 ;;
  esac
  shift
done
[[ $code =~ ^[A-Z]{6}$ ]] || usage_error "--code must be six uppercase letters, got '$code'"
[[ $tier =~ ^(Starter|Customer|Enterprise|Platform)$ ]] || usage_error "--tier must be Starter, Customer, Enterprise or Platform, got '$tier'"
[[ $wave =~ ^[1-3]$ ]] || usage_error "--wave must be 1, 2 or 3, got '$wave'"
[[ $timeout =~ ^[1-9][0-9]{0,5}$ ]] || usage_error "--timeout must be a number of seconds, got '$timeout'"
name=$(tr '[:upper:]' '[:lower:]' <<<"$code")

# ---- --local: the local control plane, the operator as a local process -------------------------------

run_local() {
  local operator_version
  operator_version=$(eva_operator_version)

  step 1 "preflight: prerequisites, local control plane, NATS"
  "$root/scripts/bootstrap.sh"
  "$root/scripts/dev-cluster.sh" up
  eval "$("$root/scripts/dev-cluster.sh" env)"
  export PATH="$root/node_modules/.bin:$PATH"
  printf '  server %s\n' "$(kubectl version -o json | eva_cli manifests value - serverVersion gitVersion)"
  helm version --short | sed 's/^/  helm /'

  step 2 "installing the EvaTenant CRD"
  kubectl apply --server-side --force-conflicts --field-manager="$field_manager" -f "$root/crds/"
  kubectl wait --for=condition=Established --timeout=60s crd/evatenants.eva.aidonow.com >/dev/null

  step 3 "starting the operator $operator_version as a local process"
  local state pidfile
  state="${EVA_DEV_CLUSTER_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/eva-operator/dev-cluster}"
  pidfile="$state/operator.pid"
  if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "  already running (pid $(cat "$pidfile"), log $state/operator.log)"
  else
    # HELM_SECRETS_DIR (a tmpfs of this cluster's own) comes from `dev-cluster.sh env`. Supervised: an
    # operator exits when it loses its lease (e.g. the API server stalled), and starts again, as a pod would.
    OPERATOR_VERSION="$operator_version" HELM_BINARY="$EVA_TOOLS_DIR/helm" \
      HELM_SERVER_BINARY="$("$root/scripts/lib/build-components.sh" helm-server)/eva-helm-server" \
      INGRESS_CLASS=eva-lb METRICS_PORT="${EVA_METRICS_PORT:-18080}" METRICS_BIND_ADDRESS=127.0.0.1 \
      setsid "$root/scripts/lib/supervise.sh" node "$root/src/cli.ts" run </dev/null >"$state/operator.log" 2>&1 &
    echo $! >"$pidfile"
    echo "  pid $(cat "$pidfile"), log $state/operator.log, metrics http://127.0.0.1:${EVA_METRICS_PORT:-18080}/metrics"
  fi

  step 4 "creating EvaTenant $name ($tier, wave $wave, operatorVersion $operator_version)"
  tenant_manifest "$operator_version" | kubectl apply -f -

  step 5 "waiting for Active (up to ${timeout}s)"
  "$root/scripts/lib/wait-for-tenant.sh" "$name" "$timeout"
  kubectl get evt "$name"
  # shellcheck disable=SC2016 # printed for the user to run
  printf '\nUse the cluster:  eval "$(scripts/dev-cluster.sh env)"; kubectl describe evt %s\n' "$name"
}

tenant_manifest() { # <operator version>
  eva_cli tenant-manifest --name "$name" --code "$code" --tier "$tier" --wave "$wave" --operator-version "$1"
}

# Formats (the EvaTenant manifest, images.txt, semver) are the operator's command's (src/script-commands/).
# shellcheck source=lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"

# Both modes apply the CRD server-side under this one field manager, whichever ran first.
field_manager=eva-quickstart

if $local_mode; then
  ((${#cluster_only[@]} == 0)) ||
    usage_error "--local runs the operator as a local process: ${cluster_only[*]} is for an install into a cluster (drop --local)"
  run_local
  exit 0
fi

# ---- an existing cluster: the CRD, the operator chart, a tenant --------------------------------------

[[ $namespace =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]] ||
  usage_error "--namespace must be a DNS label (lowercase letters, digits and '-', at most 63), got '$namespace'"
[[ $release =~ ^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?$ ]] ||
  usage_error "--release must be lowercase letters, digits and '-' (at most 53), got '$release'"
if [[ -n $values_file ]]; then
  [[ -f $values_file && -r $values_file ]] || usage_error "--values: cannot read the file '$values_file'"
fi
if $air_gap; then
  [[ -n $registry ]] || usage_error "--air-gap needs --registry HOST[:PORT][/PREFIX], the registry scripts/mirror-images.sh mirrored the images into"
  checked=$(eva_cli images registry "$registry" 2>/dev/null) ||
    usage_error "--registry must be HOST[:PORT][/PREFIX], got '$registry'"
  registry=$checked
elif [[ -n $registry ]]; then
  usage_error "--registry names the mirror of an air-gapped install: add --air-gap"
fi

chart_dir="$root/charts/eva-operator"
crd=evatenants.eva.aidonow.com
crd_file="$root/crds/$crd.yaml"
crd_stamp=eva.aidonow.com/crd-version
version_annotation=eva.aidonow.com/operator-version
images_file=${IMAGES_FILE:-$root/images.txt}
app_version=$(eva_cli manifests value "$chart_dir/Chart.yaml" appVersion || true)
eva_cli semver valid "$app_version" || die "cannot read a version (appVersion) from $chart_dir/Chart.yaml, got '$app_version'"
operator_selector="app.kubernetes.io/instance=$release,app.kubernetes.io/component=operator"
work=$(mktemp -d "${TMPDIR:-/tmp}/eva-quickstart.XXXXXX")
nats_keys=""
trap 'rm -rf "$work" ${nats_keys:+"$nats_keys"}' EXIT
dry=""
$dry_run && dry=" (dry run: nothing is changed)"

# Versions are compared by the operator's own rules (src/versions.ts), through its command.
semver_valid() { eva_cli semver valid "$1"; }

# kubectl, with the last line of its error on failure: `kube_or_die <what> <kubectl args...>`.
kube_or_die() {
  local what=$1 out
  shift
  if ! out=$(kubectl "$@" 2>"$work/kubectl.err"); then
    die "$what: $(grep -v '^Warning:' "$work/kubectl.err" | tail -n 1)"
  fi
  [[ -z $out ]] || printf '%s\n' "$out"
}

# The operator Deployment(s) of the release: "<name>\t<operator version annotation>" per line.
live_operator_deployments() {
  kubectl get deployment --namespace "$namespace" --selector "$operator_selector" \
    -o jsonpath="{range .items[*]}{.metadata.name}{\"\t\"}{.spec.template.metadata.annotations.${version_annotation//./\\.}}{\"\n\"}{end}"
}

# ---- step 1: preflight --------------------------------------------------------------------------------

step 1 "preflight: kubectl, helm, the cluster, the EvaTenant CRD$dry"
for tool in kubectl helm; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found in PATH: install it (https://kubernetes.io/docs/tasks/tools/, https://helm.sh/docs/intro/install/) and run again"
done
printf '  kubectl  %s\n' "$(kubectl version --client -o json 2>/dev/null | eva_cli manifests value - clientVersion gitVersion || true)"
printf '  helm     %s\n' "$(helm version --short 2>/dev/null || echo unknown)"

context=$(kubectl config current-context 2>/dev/null) ||
  die "kubectl has no current context (KUBECONFIG=${KUBECONFIG:-~/.kube/config}): point it at the cluster to install into"
server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}' 2>/dev/null || true)
if ! version_json=$(kubectl get --raw /version --request-timeout=15s 2>"$work/kubectl.err"); then
  die "cannot reach the cluster of context '$context' at ${server:-an unknown server}: $(grep -v '^Warning:' "$work/kubectl.err" | tail -n 1)"
fi
server_version=$(eva_cli manifests value - gitVersion <<<"$version_json" || true)
printf '  cluster  context %s, %s, Kubernetes %s\n' "$context" "$server" "${server_version:-unknown}"

missing=()
for check in "create customresourcedefinitions.apiextensions.k8s.io" "patch customresourcedefinitions.apiextensions.k8s.io" \
  "create clusterroles.rbac.authorization.k8s.io" "create clusterrolebindings.rbac.authorization.k8s.io" \
  "create deployments.apps --namespace $namespace" "create evatenants.eva.aidonow.com"; do
  read -r -a words <<<"$check"
  answer=$(kubectl auth can-i "${words[@]}" 2>/dev/null || true)
  [[ $answer == yes ]] || missing+=("${words[0]} ${words[1]}${words[3]:+ in $namespace}")
done
if ((${#missing[@]})); then
  denied=$(printf '%s, ' "${missing[@]}")
  die "the user of context '$context' may not ${denied%, }: the install needs it"
fi
echo "  permissions  CRDs, cluster RBAC, Deployments in $namespace, EvaTenants: yes"

# The installed EvaTenant CRD against crds/: older is upgraded, newer is never downgraded. The
# decision is eva-operator's (src/script-commands/crd-plan.ts); this fetches what it reads.
crd_plan() {
  eva_cli crd-plan --bundled "$crd_file" --app-version "$app_version" --installed "$work/crd-live.json" "$@" 2>"$work/crd-plan.err" ||
    die "$(cat "$work/crd-plan.err")"
}
kube_or_die "cannot read the installed CRD $crd" get crd "$crd" --ignore-not-found -o json >"$work/crd-live.json"
plan=$(crd_plan) || exit 1
if [[ ${plan%%$'\n'*} == compare ]]; then
  # The same API versions: the spec applying crds/ would give, from the API server.
  kube_or_die "the server-side dry run of $crd_file failed" apply --server-side --force-conflicts --field-manager="$field_manager" \
    --dry-run=server -f "$crd_file" -o json >"$work/crd-merged.json"
  plan=$(crd_plan --merged "$work/crd-merged.json") || exit 1
fi
crd_state=${plan%%$'\n'*}
[[ $plan != *$'\n'* ]] || printf '%s\n' "${plan#*$'\n'}"

# The quick-start NATS runs in operator mode: reuse the keys of an earlier install of this release, or
# make new ones with the operator's own command (in RAM: the seeds never touch this disk). Sets
# nats_values (the chart's nats.auth, public JWTs only) and, for new keys, nats_secret (to apply).
quick_start_nats_auth() {
  nats_values="$work/nats-auth.yaml"
  if kubectl get secret eva-operator-nats --namespace "$namespace" >/dev/null 2>&1 &&
    helm get values "$release" --namespace "$namespace" --output yaml 2>/dev/null >"$work/previous.yaml" &&
    [[ $(eva_cli manifests value "$work/previous.yaml" nats auth operatorJwt || true) == eyJ* ]]; then
    eva_cli manifests section "$work/previous.yaml" nats >"$nats_values"
    return
  fi
  [[ -x $root/node_modules/.bin/node ]] || (cd "$root" && npm ci --no-audit --no-fund >/dev/null) ||
    die "the NATS keys are made by this checkout's eva-operator (Node.js 24 from npm): npm ci failed"
  nats_keys=$(mktemp -d /dev/shm/eva-quickstart-nats.XXXXXX)
  "$root/node_modules/.bin/node" "$root/src/cli.ts" nats-bootstrap --out "$nats_keys/out" --namespace "$namespace" >/dev/null ||
    die "eva-operator nats-bootstrap failed"
  cp "$nats_keys/out/eva-operator-nats-values.yaml" "$nats_values"
  nats_secret="$nats_keys/out/eva-operator-nats-secret.yaml"
}

# The chart, rendered as step 3 installs it: NATS, images, the operator version.
helm_args=(--namespace "$namespace" --skip-crds)
[[ -n $values_file ]] && helm_args+=(-f "$values_file")
template_args=("$release" "$chart_dir" "${helm_args[@]}")
[[ -n $server_version ]] && template_args+=(--kube-version "$server_version")
nats_secret=""
if ! helm template "${template_args[@]}" --show-only templates/deployment.yaml >/dev/null 2>"$work/helm.err"; then
  grep -q 'NATS is not configured' "$work/helm.err" || die "the chart does not render with these values: $(tail -n 1 "$work/helm.err")"
  quick_start_nats_auth
  helm_args+=(--set nats.enabled=true -f "$nats_values")
  template_args+=(--set nats.enabled=true -f "$nats_values")
  echo "  NATS     a quick-start NATS server in $namespace, operator mode (nats.enabled=true; your --values may set nats.url instead)"
  if [[ -n $nats_secret ]]; then
    echo "           new NATS keys (eva-operator nats-bootstrap): Secret $namespace/eva-operator-nats for the operator;"
    echo "           the operator identity key is not kept (quick start): for production run the bootstrap yourself, see docs/install.md"
  else
    echo "           the NATS keys of the existing release (Secret $namespace/eva-operator-nats)"
  fi
else
  echo "  NATS     as your --values configure it (the operator's Secret with system.creds and operator-signing-key.nk must exist)"
fi
helm template "${template_args[@]}" >"$work/rendered.yaml" 2>"$work/helm.err" ||
  die "the chart does not render: $(tail -n 1 "$work/helm.err")"

# "<template>\t<image>" for every image of a rendered manifest.
rendered_images() { eva_cli manifests images "$1"; }


# The images.txt line of an image reference (repository:tag or repository@sha256:..., also one that
# already points at the mirror), matched by path and tag (or digest): prints "<path>\t<tag>\t<digest or PLACEHOLDER>".
catalogue_entry() { eva_cli images find "$1" --file "$images_file" --mirror "$registry" 2>/dev/null; }

if $air_gap; then
  [[ -f $images_file && -r $images_file ]] || die "cannot read the image list $images_file (IMAGES_FILE)"
  echo "  images   from $registry (air gap; digests from $images_file):"
  helm_args+=(--set-string "airGapRegistry=$registry")
  placeholders=()
  while IFS=$'\t' read -r source image; do
    case "$source" in
      templates/deployment.yaml | templates/tests/preflight.yaml) key=image ;;   # the operator, and its `helm test` preflight
      templates/nats.yaml) key=nats.image ;;
      *) die "the chart deploys $image from $source, which quickstart.sh cannot point at the mirror" ;;
    esac
    entry=$(catalogue_entry "$image") ||
      die "$image (chart value $key) is not listed in $images_file, so scripts/mirror-images.sh did not mirror it to $registry"
    IFS=$'\t' read -r path tag digest <<<"$entry"
    helm_args+=(--set-string "$key.repository=$registry/$path")
    if [[ $digest == PLACEHOLDER ]]; then
      placeholders+=("$image")
      helm_args+=(--set-string "$key.digest=" --set-string "$key.tag=$tag")
      printf '    %-48s -> %s:%s  (PLACEHOLDER digest: by tag)\n' "$image" "$registry/$path" "$tag"
    else
      helm_args+=(--set-string "$key.digest=sha256:$digest")
      printf '    %-48s -> %s@sha256:%s\n' "$image" "$registry/$path" "$digest"
    fi
  done < <(rendered_images "$work/rendered.yaml" | sort -u)
  if ((${#placeholders[@]})); then
    $dry_run || die "$images_file has no digest yet (PLACEHOLDER) for ${placeholders[*]}: an air-gapped install pulls only by digest. Use a release's images.txt (scripts/release-fill-digests.sh fills them) and mirror it with scripts/mirror-images.sh"
    printf 'quickstart: warning: PLACEHOLDER digest in %s for %s: shown by tag; a real --air-gap install refuses it\n' "$images_file" "${placeholders[*]}" >&2
  fi
  template_args=("$release" "$chart_dir" "${helm_args[@]}")
  [[ -n $server_version ]] && template_args+=(--kube-version "$server_version")
  helm template "${template_args[@]}" >"$work/rendered.yaml" 2>"$work/helm.err" ||
    die "the chart does not render with the mirrored images: $(tail -n 1 "$work/helm.err")"
  # Whatever the values: every image the chart deploys now comes from the mirror, by digest.
  while IFS=$'\t' read -r source image; do
    [[ $image == "$registry/"* ]] || die "$source still deploys $image, not from $registry"
    [[ $image == *@sha256:* ]] || $dry_run || die "$source deploys $image without a digest"
  done < <(rendered_images "$work/rendered.yaml")
fi

chart_version=$(eva_cli manifests value "$work/rendered.yaml" --source templates/deployment.yaml \
  spec template metadata annotations "$version_annotation" || true)
[[ -n $chart_version ]] || die "the rendered chart has no $version_annotation annotation on its Deployment"
echo "  operator $chart_version (the chart's operatorVersion), release $release in namespace $namespace"

# ---- step 2: the CRD ----------------------------------------------------------------------------------

crd_apply=(apply --server-side --force-conflicts --field-manager="$field_manager" -f "$root/crds/")
if $dry_run; then
  step 2 "installing the EvaTenant CRD$dry"
  kube_or_die "the server-side dry run of crds/ failed" "${crd_apply[@]}" --dry-run=server | sed 's/^/  /'
  echo "  would run: kubectl ${crd_apply[*]}"
  echo "  would run: kubectl annotate --overwrite crd $crd $crd_stamp=$app_version"
else
  step 2 "installing the EvaTenant CRD $app_version (the installed one: $crd_state)"
  kube_or_die "installing the CRD failed" "${crd_apply[@]}" | sed 's/^/  /'
  kube_or_die "annotating the CRD failed" annotate --overwrite crd "$crd" "$crd_stamp=$app_version" >/dev/null
  kube_or_die "the CRD is not Established" wait --for=condition=Established --timeout=60s "crd/$crd" >/dev/null
  echo "  $crd Established, $crd_stamp=$app_version"
fi

# ---- step 3: the operator chart -----------------------------------------------------------------------

install_args=(upgrade --install "$release" "$chart_dir" "${helm_args[@]}" --create-namespace --wait --timeout "${timeout}s")
if $dry_run; then
  step 3 "installing the operator chart$dry"
  [[ -n $nats_secret ]] && echo "  would run: kubectl apply -f - (Secret $namespace/eva-operator-nats: new NATS system user and operator signing key)"
  echo "  would run: helm ${install_args[*]}"
  echo "  it renders (helm template):"
  echo
  cat "$work/rendered.yaml"
else
  step 3 "installing the operator chart: release $release in namespace $namespace (operator $chart_version)"
  started=$SECONDS
  if [[ -n $nats_secret ]]; then
    kubectl get namespace "$namespace" >/dev/null 2>&1 || kube_or_die "creating namespace $namespace failed" create namespace "$namespace" >/dev/null
    kube_or_die "creating the operator's NATS Secret failed" apply -f "$nats_secret" | sed 's/^/  /'
  fi
  helm "${install_args[@]}" >"$work/helm.out" 2>"$work/helm.err" || {
    cat "$work/helm.err" >&2
    die "helm upgrade --install of $release in $namespace failed: $(grep -v '^WARNING' "$work/helm.err" | tail -n 1)"
  }
  sed -n '/^NAME:/,/^REVISION:/p' "$work/helm.out" | sed 's/^/  /'
  kube_or_die "the operator Deployment is not Available" wait --for=condition=Available --timeout="${timeout}s" \
    --namespace "$namespace" deployment --selector "$operator_selector" | sed 's/^/  /'
  echo "  Available after $((SECONDS - started))s"
fi

# ---- step 4: the EvaTenant ----------------------------------------------------------------------------

deployments=$(live_operator_deployments 2>/dev/null || true)
if [[ -z $deployments ]]; then
  $dry_run || die "no operator Deployment ($operator_selector) in namespace $namespace after the install"
  operator_version=$chart_version
  version_source="the chart's operatorVersion: there is no operator Deployment in $namespace yet"
else
  (($(wc -l <<<"$deployments") == 1)) ||
    die "several operator Deployments match $operator_selector in $namespace: $(cut -f1 <<<"$deployments" | tr '\n' ' ')"
  IFS=$'\t' read -r deployment operator_version <<<"$deployments"
  semver_valid "$operator_version" ||
    die "the Deployment $namespace/$deployment has no valid $version_annotation annotation (got '$operator_version')"
  version_source="the annotation $version_annotation of Deployment $namespace/$deployment"
  if $dry_run && [[ $operator_version != "$chart_version" ]]; then
    version_source+="; the upgrade above would make it $chart_version"
  fi
fi
step 4 "creating EvaTenant $name ($tier, wave $wave, operatorVersion $operator_version)$dry"
echo "  operatorVersion from $version_source"
tenant_manifest "$operator_version" >"$work/tenant.yaml"
if $dry_run; then
  echo "  would run: kubectl apply -f - <<EOF"
  sed 's/^/    /' "$work/tenant.yaml"
  echo "  EOF"
  if [[ $crd_state != same ]]; then
    echo "  (not validated by the API server: the CRD it would be checked against is installed in step 2)"
  else
    kube_or_die "the API server rejects this EvaTenant" apply --dry-run=server -f "$work/tenant.yaml" -o name >/dev/null
    echo "  the API server accepts it (server-side dry run)"
  fi
else
  kube_or_die "creating EvaTenant $name failed" apply -f "$work/tenant.yaml" | sed 's/^/  /'
fi

# ---- step 5: Active -----------------------------------------------------------------------------------

if $dry_run; then
  step 5 "waiting for Active$dry"
  echo "  would wait up to ${timeout}s for EvaTenant $name to be Active, printing each condition as it turns True"
  echo "  (scripts/lib/wait-for-tenant.sh $name $timeout)"
  printf '\nDry run: nothing was changed in the cluster of context %s.\n' "$context"
  exit 0
fi
step 5 "waiting for Active (up to ${timeout}s)"
"$root/scripts/lib/wait-for-tenant.sh" "$name" "$timeout"
kubectl get evt "$name"
printf '\nNext:  kubectl describe evt %s;  kubectl logs -n %s -l %s -f\n' "$name" "$namespace" "$operator_selector"
