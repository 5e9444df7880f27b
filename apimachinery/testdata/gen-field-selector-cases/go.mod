module kubemock.dev/gen-field-selector-cases

go 1.23.0

require k8s.io/apimachinery v0.32.0
