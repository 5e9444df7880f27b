//! kubemock-conformance: a black-box HTTP test suite for the Kubernetes API semantics kubemock
//! promises (`shared/spec/API-SEMANTICS.md`), runnable against any server URL.
//!
//! Not yet implemented: the harness will take the server URL from the environment, else start
//! an in-process server on port 0; one test file per API area.
