module kubemock.dev/gen-quantity-cases

go 1.23.0

require k8s.io/apimachinery v0.32.0

require (
	github.com/fxamacker/cbor/v2 v2.7.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
)
