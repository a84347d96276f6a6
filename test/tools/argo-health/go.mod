module github.com/aidonow/eva-operator/test/tools/argo-health

go 1.26

require github.com/yuin/gopher-lua v1.1.1
