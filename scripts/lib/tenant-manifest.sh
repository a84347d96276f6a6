#!/usr/bin/env bash
# Prints an EvaTenant manifest (seeds 1.0.0, pinned to an operator version), for kubectl apply -f -.
#
#   scripts/lib/tenant-manifest.sh NAME CODE TIER WAVE OPERATOR_VERSION
set -euo pipefail
(($# == 5)) || { echo "usage: $0 NAME CODE TIER WAVE OPERATOR_VERSION" >&2; exit 2; }
cat <<MANIFEST
apiVersion: eva.aidonow.com/v1alpha1
kind: EvaTenant
metadata:
  name: $1
spec:
  capsuleCode: $2
  tier: $3
  wave: $4
  seedsVersion: "1.0.0"
  operatorVersion: "$5"
MANIFEST
