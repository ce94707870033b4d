//! The native module of the Python package `engram-memory-engine`
//! (`engram_memory._native`): the Rust host (`engram-binding`, over the
//! `engram` library: wasmtime, the engine, the SQLite, PostgreSQL and
//! memory stores with their locks and trail) in CPython. The package's
//! `engram_memory/__init__.py` is its only caller; what it answers is the
//! binding's framed answer strings, which the package's API parses.
//!
//! Every call releases the GIL while Rust works: other Python threads run
//! meanwhile, and calls of other domains run at the same time. A domain
//! takes one call at a time; a second thread's call waits its turn.
//!
//! The caller's algorithms come as one function `(kind, args) -> answer`
//! (see [`engram_binding::Dispatch`]), written once in the package; a store
//! written in Python (the persistence capability supplied in Python) is
//! called back through [`PyBackend`]. Both are called with the GIL taken
//! again, on the thread of the call.
//!
//! A failure comes back framed as the answers are (`I` invalid, `K`
//! locked, `S` stopped, `F` failed, then why): from a call as its answer,
//! from an open as the message of a `RuntimeError`.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use engram::audit::{AuditEntry, AuditQuery, AuditSink, trail_of_pages};
use engram::backend::{Op, Order, Pair, Precondition, StoreError};
use engram_binding::{Builtin, Dispatch, Failure, Handle, Plugins, Store};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// A `RuntimeError` with `message`.
fn error(message: impl Into<String>) -> PyErr {
    PyRuntimeError::new_err(message.into())
}

/// `mutex` locked, whatever a panic left in it.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A store: a SQLite file, a PostgreSQL database, memory, or a store
/// written in Python. Closing it lets it go; the domains opened in it hold
/// it until they close.
#[pyclass(frozen, module = "engram_memory._native")]
struct NativeStore {
    store: Mutex<Option<Store>>,
}

impl NativeStore {
    /// The store, unless closed.
    fn store(&self) -> PyResult<Store> {
        locked(&self.store)
            .clone()
            .ok_or_else(|| error(engram_binding::store_closed()))
    }

    fn of(store: Store) -> Self {
        NativeStore {
            store: Mutex::new(Some(store)),
        }
    }
}

#[pymethods]
impl NativeStore {
    /// Opens the store `spec` names (a SQLite file path or a `postgres://`
    /// URL) with `options` (JSON `{"sqlite":{…},"postgres":{…}}`), or a
    /// fresh store in memory when `spec` is None.
    #[staticmethod]
    #[pyo3(signature = (spec=None, options=None))]
    fn open(py: Python<'_>, spec: Option<String>, options: Option<String>) -> PyResult<Self> {
        let store = match spec {
            None => Store::memory(),
            Some(spec) => py
                .detach(|| Store::open(&spec, options.as_deref().unwrap_or("")))
                .map_err(|e| error(e.framed()))?,
        };
        Ok(Self::of(store))
    }

    /// The store `backend`, an object written in Python (the package's
    /// `Backend` protocol), keeps: its pairs and its audit trail.
    #[staticmethod]
    fn of_backend(backend: Py<PyAny>) -> Self {
        let backend = Arc::new(PyBackend { object: backend });
        Self::of(Store::from_parts(backend.clone(), backend))
    }

    /// The trail's newest entries `query` (JSON) asks for: a framed answer.
    fn audit(&self, py: Python<'_>, query: String) -> PyResult<String> {
        let store = self.store()?;
        py.detach(|| store.audit(&query))
            .map(|answer| answer.framed())
            .map_err(|e| error(engram_binding::store_failure(&e)))
    }

    /// The agents whose domains hold anything: a JSON array.
    fn domains(&self, py: Python<'_>) -> PyResult<String> {
        let store = self.store()?;
        py.detach(|| store.domains())
            .map_err(|e| error(engram_binding::store_failure(&e)))
    }

    /// Breaks `agent`'s maintenance lock: `{"agent_id","unlocked"}`.
    fn unlock(&self, py: Python<'_>, agent: String) -> PyResult<String> {
        let store = self.store()?;
        py.detach(|| store.unlock(&agent))
            .map_err(|e| error(engram_binding::store_failure(&e)))
    }

    /// The store-wide maintenance call `name` (`export`, `import` or
    /// `expire`) with `args` (JSON), each domain opened for maintenance
    /// with `settings` (a domain's, JSON) and the caller's algorithms as
    /// [`NativeDomain::open`] takes them, at the caller's `time`: the framed
    /// answer, a failure of the host among them.
    #[pyo3(signature = (name, args, settings, algorithms=None, given=Vec::new(), clock=false, time=None))]
    #[allow(clippy::too_many_arguments)]
    fn maintain(
        &self,
        py: Python<'_>,
        name: &str,
        args: &str,
        settings: &str,
        algorithms: Option<Py<PyAny>>,
        given: Vec<String>,
        clock: bool,
        time: Option<i64>,
    ) -> PyResult<String> {
        let store = self.store()?;
        let dispatch = algorithms.map(|f| Arc::new(PyDispatch(f)) as Arc<dyn Dispatch>);
        let plugins = Plugins::dispatched(dispatch, &given, clock);
        Ok(py.detach(|| store.maintain(name, args, settings, plugins, time)))
    }

    /// Lets the store go.
    fn close(&self) {
        locked(&self.store).take();
    }
}

/// A number for the calling thread, never 0: which thread holds a domain.
fn thread_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static KEY: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    KEY.with(|key| *key)
}

/// One agent's domain.
#[pyclass(frozen, module = "engram_memory._native")]
struct NativeDomain {
    handle: Mutex<Option<Handle>>,
    /// The [`thread_key`] of the thread whose call is under way; 0 when none.
    caller: AtomicU64,
    /// Whether the domain was closed from its own call's algorithm or
    /// store: it closes as that call answers.
    closing: AtomicBool,
    /// How the domain is open: `online` or `maintenance`.
    #[pyo3(get)]
    mode: &'static str,
}

#[pymethods]
impl NativeDomain {
    /// Opens the domain `settings` (JSON) name in `store`. `algorithms`:
    /// the caller's dispatcher, `given` the names of the algorithms it
    /// gives (`summarizer`, `ranker`, `tokenizer`, `embedder`: its model is
    /// the settings' `embedder`); `clock`: whether each
    /// call comes with the time of the caller's clock. A failure raises a
    /// `RuntimeError` whose message is framed (`I`, `K` or `F`).
    #[staticmethod]
    #[pyo3(signature = (store, settings, algorithms=None, given=Vec::new(), clock=false))]
    fn open(
        py: Python<'_>,
        store: &NativeStore,
        settings: String,
        algorithms: Option<Py<PyAny>>,
        given: Vec<String>,
        clock: bool,
    ) -> PyResult<Self> {
        let store = store.store()?;
        let dispatch = algorithms.map(|f| Arc::new(PyDispatch(f)) as Arc<dyn Dispatch>);
        let plugins = Plugins::dispatched(dispatch, &given, clock);
        let handle = py
            .detach(|| Handle::open(&store, &settings, plugins))
            .map_err(|e| error(e.framed()))?;
        Ok(NativeDomain {
            mode: handle.mode(),
            handle: Mutex::new(Some(handle)),
            caller: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        })
    }

    /// Makes the call `name` (the binding's: a surface call, `audit`,
    /// `forget`, `domains`, `unlock`) with `args`; `input` names the input
    /// in an input failure; `time` is the caller's clock, when the domain
    /// has one. Answers the framed answer, a failure of the host among them
    /// (`S`, `K`, `F`, or `C` for a closed domain).
    #[pyo3(signature = (name, input, args, time=None))]
    fn call(
        &self,
        py: Python<'_>,
        name: &str,
        input: &str,
        args: &str,
        time: Option<i64>,
    ) -> PyResult<String> {
        let me = thread_key();
        if self.caller.load(Ordering::SeqCst) == me {
            return Ok(engram_binding::busy());
        }
        Ok(py.detach(|| {
            let mut held = locked(&self.handle);
            let Some(handle) = held.as_mut() else {
                return engram_binding::closed();
            };
            self.caller.store(me, Ordering::SeqCst);
            let answer = handle.call(name, input, args, time);
            self.caller.store(0, Ordering::SeqCst);
            if self.closing.swap(false, Ordering::SeqCst) {
                drop(held.take());
            }
            answer.unwrap_or_else(|failure: Failure| failure.framed())
        }))
    }

    /// The call `name` as [`NativeDomain::call`] makes it, its value
    /// already made Python objects: `(None, value)`, or `(framed, None)`
    /// when the answer is no value (a failure, framed). The answer's JSON
    /// text is read once, in Rust ([`objects`]), instead of being handed
    /// to `json.loads`.
    #[pyo3(signature = (name, input, args, time=None))]
    fn call_value<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        input: &str,
        args: &str,
        time: Option<i64>,
    ) -> PyResult<(Option<String>, Bound<'py, PyAny>)> {
        let framed = self.call(py, name, input, args, time)?;
        match framed.as_bytes().first() {
            Some(b'V' | b'L') => Ok((None, objects(py, &framed[1..])?)),
            _ => Ok((Some(framed), py.None().into_bound(py))),
        }
    }

    /// How many times the domain's engine instance stopped and was let go
    /// (the next call makes a fresh one); 0 once closed.
    #[getter]
    fn restarts(&self, py: Python<'_>) -> u64 {
        py.detach(|| locked(&self.handle).as_mut().map_or(0, Handle::restarts))
    }

    /// Closes the domain once a call under way has answered: its
    /// maintenance lock goes, and its store when no other domain holds it.
    /// Closed from the call's own summarizer, ranker, tokenizer, embedder
    /// or store, it closes as that call answers.
    fn close(&self, py: Python<'_>) {
        if self.caller.load(Ordering::SeqCst) == thread_key() {
            self.closing.store(true, Ordering::SeqCst);
            return;
        }
        let handle = py.detach(|| locked(&self.handle).take());
        drop(handle);
    }
}

/// The caller's dispatcher (the package's), called with the GIL taken.
struct PyDispatch(Py<PyAny>);

impl Dispatch for PyDispatch {
    fn dispatch(&self, kind: &str, args: String) -> Result<String, String> {
        Python::attach(|py| {
            self.0
                .call1(py, (kind, args))
                .and_then(|answer| answer.extract::<String>(py))
                .map_err(|e| e.to_string())
        })
    }
}

/// A store written in Python (the package's `Backend` protocol): its
/// pairs and its trail, called with the GIL taken. Byte strings cross as
/// `bytes`; audit entries as dicts of the `engram audit` line form.
struct PyBackend {
    object: Py<PyAny>,
}

impl PyBackend {
    /// Calls the store's `method` with `args`; a Python exception is the
    /// store's failure, its words.
    fn call<'py, A>(
        &self,
        py: Python<'py>,
        method: &str,
        args: A,
    ) -> Result<Bound<'py, PyAny>, String>
    where
        A: pyo3::call::PyCallArgs<'py>,
    {
        self.object
            .bind(py)
            .call_method1(method, args)
            .map_err(|e| format!("the store's {method}: {e}"))
    }

    /// `entries` as the list of dicts the store takes.
    fn entries<'py>(py: Python<'py>, entries: &[AuditEntry]) -> Result<Bound<'py, PyAny>, String> {
        let text = serde_json::to_string(entries).map_err(|e| e.to_string())?;
        objects(py, &text).map_err(|e| e.to_string())
    }

    /// `(key, value or None)` pairs of conditions or changes.
    fn pairs<'py>(
        py: Python<'py>,
        pairs: impl Iterator<Item = (&'py [u8], Option<&'py [u8]>)>,
    ) -> PyResult<Bound<'py, PyList>> {
        let items: Vec<Bound<'py, PyTuple>> = pairs
            .map(|(key, value)| {
                PyTuple::new(
                    py,
                    [
                        PyBytes::new(py, key).into_any(),
                        match value {
                            Some(value) => PyBytes::new(py, value).into_any(),
                            None => py.None().into_bound(py),
                        },
                    ],
                )
            })
            .collect::<PyResult<_>>()?;
        PyList::new(py, items)
    }

    /// Commits through the store's `commit(conditions, changes, entries)`.
    fn commit_with(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
    ) -> Result<(), StoreError> {
        Python::attach(|py| {
            let conditions = Self::pairs(
                py,
                preconditions.iter().map(|p| match p {
                    Precondition::Absent(key) => (key.as_slice(), None),
                    Precondition::Holds(key, value) => (key.as_slice(), Some(value.as_slice())),
                }),
            )
            .map_err(|e| e.to_string())?;
            let changes = Self::pairs(
                py,
                ops.iter().map(|op| match op {
                    Op::Put(key, value) => (key.as_slice(), Some(value.as_slice())),
                    Op::Delete(key) => (key.as_slice(), None),
                }),
            )
            .map_err(|e| e.to_string())?;
            let entries = Self::entries(py, trail)?;
            let done = self.call(py, "commit", (conditions, changes, entries))?;
            done.is_truthy().map_err(|e| e.to_string())
        })
        .map_err(StoreError::Unavailable)
        .and_then(|done| {
            if done {
                Ok(())
            } else {
                Err(StoreError::Conflict)
            }
        })
    }

    /// Whether the store has `method`.
    fn has(&self, method: &str) -> bool {
        Python::attach(|py| self.object.bind(py).hasattr(method).unwrap_or(false))
    }
}

/// `value` as bytes, or why not.
fn bytes_of(value: &Bound<'_, PyAny>, what: &str) -> Result<Vec<u8>, String> {
    value
        .cast::<PyBytes>()
        .map(|b| b.as_bytes().to_vec())
        .map_err(|_| format!("the store answered {what} that is not bytes"))
}

impl engram::Backend for PyBackend {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let mut values = self.get_many(&[key.to_vec()])?;
        Ok(values.pop().flatten())
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        Python::attach(|py| {
            let list = PyList::new(py, keys.iter().map(|key| PyBytes::new(py, key)))
                .map_err(|e| e.to_string())?;
            let values = self.call(py, "get_many", (list,))?;
            let mut answer = Vec::with_capacity(values.len().unwrap_or(0));
            for value in values.try_iter().map_err(|e| e.to_string())? {
                let value = value.map_err(|e| e.to_string())?;
                answer.push(if value.is_none() {
                    None
                } else {
                    Some(bytes_of(&value, "a value")?)
                });
            }
            if answer.len() != keys.len() {
                return Err(format!(
                    "the store's get_many answered {} values for {} keys",
                    answer.len(),
                    keys.len()
                ));
            }
            Ok(answer)
        })
        .map_err(StoreError::Unavailable)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        Python::attach(|py| {
            let args = (
                PyBytes::new(py, start),
                PyBytes::new(py, end),
                limit,
                order == Order::Descending,
            );
            let pairs = self.call(py, "scan", args)?;
            let mut answer = Vec::new();
            for pair in pairs.try_iter().map_err(|e| e.to_string())? {
                let pair = pair.map_err(|e| e.to_string())?;
                let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                    pair.extract().map_err(|_| {
                        "the store's scan answered something other than (key, value) pairs"
                            .to_owned()
                    })?;
                answer.push((bytes_of(&key, "a key")?, bytes_of(&value, "a value")?));
            }
            Ok(answer)
        })
        .map_err(StoreError::Unavailable)
    }

    fn commit(&self, preconditions: &[Precondition], ops: &[Op]) -> Result<(), StoreError> {
        self.commit_with(preconditions, ops, &[])
    }

    fn commit_audited(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
        sink: &dyn AuditSink,
    ) -> Result<bool, StoreError> {
        // The store keeps its own trail: the entries go with the commit.
        if engram::backend::same_object(self, sink) {
            self.commit_with(preconditions, ops, trail).map(|()| true)
        } else {
            self.commit_with(preconditions, ops, &[]).map(|()| false)
        }
    }

    fn lock_domain(&self, prefix: &[u8]) -> Result<bool, StoreError> {
        if !self.has("lock_domain") {
            return Ok(false);
        }
        let key = engram::backend::domain_lock_key(prefix);
        Python::attach(|py| {
            self.call(py, "lock_domain", (PyBytes::new(py, prefix), key))
                .map(|_| true)
        })
        .map_err(StoreError::Unavailable)
    }

    fn unlock_domain(&self, prefix: &[u8]) {
        let key = engram::backend::domain_lock_key(prefix);
        // Nothing to answer: a store that cannot let go says so next time.
        let _ = Python::attach(|py| {
            self.call(py, "unlock_domain", (PyBytes::new(py, prefix), key))
                .map(drop)
        });
    }
}

impl AuditSink for PyBackend {
    fn append(&self, entry: &AuditEntry) -> anyhow::Result<()> {
        Python::attach(|py| {
            let entries = Self::entries(py, std::slice::from_ref(entry))?;
            self.call(py, "append_audit", (entries,)).map(drop)
        })
        .map_err(anyhow::Error::msg)
    }

    /// The store's rows a page at a time (`audit_page(before, limit)`:
    /// `(seq, entry)` pairs, newest first), filtered as every host filters
    /// them ([`trail_of_pages`]).
    fn trail(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditEntry>> {
        let page = |before: Option<u64>, limit: u32| {
            let text = Python::attach(|py| {
                let rows = self.call(py, "audit_page", (before, limit))?;
                py.import("json")
                    .and_then(|json| json.call_method1("dumps", (rows,)))
                    .and_then(|text| text.extract::<String>())
                    .map_err(|e| format!("the store's audit_page answered no list of rows: {e}"))
            })
            .map_err(anyhow::Error::msg)?;
            serde_json::from_str::<Vec<(u64, AuditEntry)>>(&text).map_err(|e| {
                anyhow::anyhow!("the store's audit_page answered no list of (seq, entry) rows: {e}")
            })
        };
        trail_of_pages(query, page, |why| {
            anyhow::anyhow!("the store's audit_page: {why}")
        })
    }
}

/// The engine's own summarizer, ranker and tokenizer (every host's
/// defaults), reached as a caller's are: `kind` and the arguments' JSON
/// text in, the answer framed `V…` or `E<why>`.
#[pyfunction]
fn builtin(py: Python<'_>, kind: &str, args: String) -> String {
    static BUILTIN: OnceLock<Builtin> = OnceLock::new();
    py.detach(|| {
        BUILTIN
            .get_or_init(Builtin::default)
            .dispatch(kind, args)
            .unwrap_or_else(|why| format!("E{why}"))
    })
}

/// Runs the `engram` command line `argv` (the program's name first) in
/// this process, as the native `engram` binary does: its exit code. The
/// package's `engram` command runs it.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| engram_binding::main(argv))
}

/// The module.
/// JSON text as the Python objects `json.loads` makes of it (dicts, lists,
/// strings, ints, floats, booleans, None), built while serde_json reads the
/// text, with no tree in between. Integers are exact (an answer's are
/// 64-bit at most), floats the value their shortest text names.
fn objects<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    use serde::de::DeserializeSeed;
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = Objects(py)
        .deserialize(&mut reader)
        .and_then(|value| reader.end().map(|()| value))
        .map_err(|e| error(format!("the host's answer is not JSON: {e}")))?;
    Ok(value)
}

/// Makes the Python object of one JSON value ([`objects`]).
#[derive(Clone, Copy)]
struct Objects<'py>(Python<'py>);

impl<'de, 'py> serde::de::DeserializeSeed<'de> for Objects<'py> {
    type Value = Bound<'py, PyAny>;

    fn deserialize<D: serde::Deserializer<'de>>(self, from: D) -> Result<Self::Value, D::Error> {
        from.deserialize_any(self)
    }
}

impl<'de, 'py> serde::de::Visitor<'de> for Objects<'py> {
    type Value = Bound<'py, PyAny>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(pyo3::types::PyBool::new(self.0, v).to_owned().into_any())
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(pyo3::types::PyInt::new(self.0, v).into_any())
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(pyo3::types::PyInt::new(self.0, v).into_any())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(pyo3::types::PyFloat::new(self.0, v).into_any())
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(pyo3::types::PyString::new(self.0, v).into_any())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.0.None().into_bound(self.0))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let list = PyList::empty(self.0);
        while let Some(item) = seq.next_element_seed(self)? {
            list.append(item).map_err(serde::de::Error::custom)?;
        }
        Ok(list.into_any())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let dict = pyo3::types::PyDict::new(self.0);
        while let Some(key) = map.next_key_seed(self)? {
            let value = map.next_value_seed(self)?;
            dict.set_item(key, value)
                .map_err(serde::de::Error::custom)?;
        }
        Ok(dict.into_any())
    }
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NativeStore>()?;
    module.add_class::<NativeDomain>()?;
    module.add_function(wrap_pyfunction!(builtin, module)?)?;
    module.add_function(wrap_pyfunction!(main, module)?)?;
    module.add(
        "POSTGRES_DEFAULTS",
        engram::backend::postgres_defaults::json(),
    )?;
    module.add("MESSAGES", engram_binding::messages::json())?;
    Ok(())
}
