//! How long a PostgreSQL store's connection waits, by default: the one
//! place every host takes these from ([`crate::PostgresOptions`]'s
//! defaults; the language packages' `DEFAULT_POSTGRES_OPTIONS` and
//! `POSTGRES_DEFAULTS`, through [`json`]). Compiled without the `postgres`
//! feature too, for the build that writes them out.

use std::time::Duration;

/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server lets one statement run, lock waits included
/// (`statement_timeout`).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the server keeps a session that sits idle inside a transaction
/// (`idle_in_transaction_session_timeout`).
pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the connection may stay silent before TCP keepalive probes
/// start.
pub const KEEPALIVES_IDLE: Duration = Duration::from_secs(15);
/// How long data sent may stay unacknowledged before the connection is
/// given up (`TCP_USER_TIMEOUT`, Linux).
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// The defaults as a JSON object by the names the language packages'
/// settings give them, in ms: `{"connectTimeout":5000,…}`.
pub fn json() -> String {
    let fields = [
        ("connectTimeout", CONNECT_TIMEOUT),
        ("statementTimeout", STATEMENT_TIMEOUT),
        ("idleInTransactionTimeout", IDLE_IN_TRANSACTION_TIMEOUT),
        ("keepalivesIdle", KEEPALIVES_IDLE),
        ("tcpUserTimeout", TCP_USER_TIMEOUT),
    ];
    let fields: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("  \"{name}\": {}", value.as_millis()))
        .collect();
    format!("{{\n{}\n}}\n", fields.join(",\n"))
}
