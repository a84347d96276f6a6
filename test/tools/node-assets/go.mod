module github.com/aidonow/eva-operator/test/tools/node-assets

go 1.26.0
