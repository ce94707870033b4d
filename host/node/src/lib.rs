//! The Node-API addon of the npm package `engram-memory`: the Rust host
//! (`engram-binding`, over the `engram` library: wasmtime, the engine, the
//! SQLite, PostgreSQL and memory stores with their locks and trail) in
//! Node. The package's `src/native.js` is its only caller; what it answers
//! is the binding's framed answer strings, which the package's API parses.
//!
//! A domain opened synchronously runs on the JavaScript thread: every call
//! answers at once, and the summarizer, ranker, tokenizer and embedder a
//! caller gives are called back on that thread during the call. A domain opened
//! asynchronously runs on a thread of its own: every call answers a
//! promise, and the caller's algorithms are called on the JavaScript
//! thread through a thread-safe function, their promises awaited there
//! while the engine's thread waits for the answer.
//!
//! The caller's algorithms come as one function `(kind, args) => answer`
//! (`kind` `summarize`, `rank`, `count-tokens` or `embed`, `args` and the
//! answer JSON text framed `V…` or `E<why>`), written once in
//! `src/native.js`; an embedder's model comes in the settings
//! (`"embedder": {"name","dimension"}`).
//! The caller's clock is read by the package before each call and handed
//! in with it (`time`), so the engine's time is never a call into
//! JavaScript.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use engram_binding::{Dispatch, Handle, Plugins, Store};
use napi::bindgen_prelude::{Env, FnArgs, Function, FunctionRef, Object, Promise};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Error, JsDeferred, Status};
use napi_derive::napi;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::ThreadId;

/// A JavaScript `Error` with `message`: framed (`I`, `K`, `F` or `C`,
/// then the words) when it is a failure the package makes its own error
/// of (`src/errors.js`), plain when it is a misuse of the addon.
fn error(message: impl Into<String>) -> Error {
    Error::new(Status::GenericFailure, message.into())
}

/// A failure of a store's call, framed `F`.
fn store_failure(e: &engram_binding::Error) -> Error {
    error(engram_binding::store_failure(e))
}

/// A store: a SQLite file, a PostgreSQL database, or memory. Closing it
/// lets it go; the domains opened in it hold it until they close.
#[napi]
pub struct NativeStore {
    store: RefCell<Option<Store>>,
}

impl NativeStore {
    /// The store, unless closed.
    fn store(&self) -> napi::Result<Store> {
        self.store
            .borrow()
            .clone()
            .ok_or_else(|| error(engram_binding::store_closed()))
    }
}

#[napi]
impl NativeStore {
    /// Opens the store `spec` names (a SQLite file path or a `postgres://`
    /// URL) with `options` (JSON `{"sqlite":{…},"postgres":{…}}`), or a
    /// fresh store in memory when `spec` is absent.
    #[napi(factory)]
    pub fn open(spec: Option<String>, options: Option<String>) -> napi::Result<Self> {
        let store = match spec {
            None => Store::memory(),
            Some(spec) => Store::open(&spec, options.as_deref().unwrap_or(""))
                .map_err(|e| error(e.framed()))?,
        };
        Ok(NativeStore {
            store: RefCell::new(Some(store)),
        })
    }

    /// The trail's newest entries `query` (JSON) asks for: a framed answer.
    #[napi]
    pub fn audit(&self, query: String) -> napi::Result<String> {
        self.store()?
            .audit(&query)
            .map(|answer| answer.framed())
            .map_err(|e| store_failure(&e))
    }

    /// The agents whose domains hold anything: a JSON array.
    #[napi]
    pub fn domains(&self) -> napi::Result<String> {
        self.store()?.domains().map_err(|e| store_failure(&e))
    }

    /// Breaks `agent`'s maintenance lock: `{"agent_id","unlocked"}`.
    #[napi]
    pub fn unlock(&self, agent: String) -> napi::Result<String> {
        self.store()?.unlock(&agent).map_err(|e| store_failure(&e))
    }

    /// The store-wide maintenance call `name` (`export`, `import` or
    /// `expire`) with `args` (JSON), each domain opened for maintenance
    /// with `settings` (a domain's, JSON) and the caller's algorithms as
    /// [`NativeDomain::open`] takes them, at the caller's `time`: the
    /// framed answer, a failure of the host among them.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn maintain(
        &self,
        env: Env,
        name: String,
        args: String,
        settings: String,
        algorithms: Option<Function<Args, String>>,
        given: Vec<String>,
        clock: bool,
        time: Option<f64>,
    ) -> napi::Result<String> {
        let caller = Caller::of_sync(&env, algorithms)?;
        let plugins = plugins(caller, &given, clock);
        Ok(self
            .store()?
            .maintain(&name, &args, &settings, plugins, time.map(|t| t as i64)))
    }

    /// [`NativeStore::maintain`] on a thread of its own, the caller's
    /// algorithms answering promises: a promise of the framed answer.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn maintain_async<'env>(
        &self,
        env: &'env Env,
        name: String,
        args: String,
        settings: String,
        algorithms: Option<Function<Args, Promise<String>>>,
        given: Vec<String>,
        clock: bool,
        time: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let caller = Caller::of_async(algorithms, &Arc::new(AtomicUsize::new(0)))?;
        let plugins = plugins(caller, &given, clock);
        let store = self.store()?;
        let (answer, promise): (Answer, _) = env.create_deferred()?;
        std::thread::Builder::new()
            .name("engram-maintenance".into())
            .spawn(move || {
                let framed =
                    store.maintain(&name, &args, &settings, plugins, time.map(|t| t as i64));
                answer.resolve(Box::new(move |_| Ok(framed)));
            })
            .map_err(|e| error(format!("starting the maintenance thread: {e}")))?;
        Ok(promise)
    }

    /// Lets the store go.
    #[napi]
    pub fn close(&self) {
        self.store.borrow_mut().take();
    }
}

/// The arguments of the caller's algorithms' dispatcher: the kind and the
/// arguments' JSON text.
type Args = FnArgs<(String, String)>;

/// The caller's dispatcher as a domain's own thread calls it.
type AsyncDispatcher = ThreadsafeFunction<Args, Promise<String>, Args, Status, false, true>;

/// How the caller's algorithms are reached.
enum Caller {
    /// On the JavaScript thread, during a call made on it.
    Sync {
        env: RawEnv,
        function: FunctionRef<Args, String>,
        thread: ThreadId,
    },
    /// From the domain's own thread, through a thread-safe function whose
    /// promise the JavaScript thread settles; `waiting` counts the
    /// algorithms' promises not yet settled.
    Async {
        function: AsyncDispatcher,
        waiting: Arc<AtomicUsize>,
    },
}

/// The JavaScript environment a domain was opened in: used only on the
/// thread that opened it ([`Caller::call`] checks).
struct RawEnv(napi::sys::napi_env);

// The environment is used only on its own thread (checked before each use).
unsafe impl Send for RawEnv {}
unsafe impl Sync for RawEnv {}

impl Caller {
    /// The caller's dispatcher, if any, as a thread other than the
    /// JavaScript thread calls it, its promises counted in `waiting`.
    fn of_async(
        algorithms: Option<Function<Args, Promise<String>>>,
        waiting: &Arc<AtomicUsize>,
    ) -> napi::Result<Option<Self>> {
        algorithms
            .map(|function| {
                Ok(Caller::Async {
                    function: function
                        .build_threadsafe_function()
                        .callee_handled::<false>()
                        .weak::<true>()
                        .build()?,
                    waiting: waiting.clone(),
                })
            })
            .transpose()
    }

    /// The caller's dispatcher, if any, as the JavaScript thread calls it.
    fn of_sync(
        env: &Env,
        algorithms: Option<Function<Args, String>>,
    ) -> napi::Result<Option<Self>> {
        algorithms
            .map(|function| {
                Ok(Caller::Sync {
                    env: RawEnv(env.raw()),
                    function: function.create_ref()?,
                    thread: std::thread::current().id(),
                })
            })
            .transpose()
    }
}

impl Dispatch for Caller {
    fn dispatch(&self, kind: &str, args: String) -> Result<String, String> {
        let args = (kind.to_owned(), args);
        match self {
            Caller::Sync {
                env,
                function,
                thread,
            } => {
                if std::thread::current().id() != *thread {
                    return Err(format!(
                        "the {kind} was called off the JavaScript thread it was given on"
                    ));
                }
                let env = Env::from_raw(env.0);
                let function = function.borrow_back(&env).map_err(|e| e.reason)?;
                function.call(FnArgs::from(args)).map_err(|e| e.reason)
            }
            Caller::Async { function, waiting } => {
                waiting.fetch_add(1, Ordering::SeqCst);
                let _settled = Settled(waiting);
                let (sent, received) = mpsc::channel();
                let status = function.call_with_return_value(
                    FnArgs::from(args),
                    ThreadsafeFunctionCallMode::Blocking,
                    move |answer: napi::Result<Promise<String>>, _env| {
                        let _ = sent.send(answer);
                        Ok(())
                    },
                );
                if status != Status::Ok {
                    return Err(format!("the {kind} could not be called: {status}"));
                }
                let promise = received
                    .recv()
                    .map_err(|_| format!("the {kind} was not called: Node is exiting"))?
                    .map_err(|e| e.reason)?;
                futures::executor::block_on(promise).map_err(|e| e.reason)
            }
        }
    }
}

/// Counts down an algorithm's promise as waited for when dropped.
struct Settled<'a>(&'a AtomicUsize);

impl Drop for Settled<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Which of the algorithms the caller gave, reached through `caller`.
fn plugins(caller: Option<Caller>, given: &[String], clock: bool) -> Plugins {
    Plugins::dispatched(
        caller.map(|caller| Arc::new(caller) as Arc<dyn Dispatch>),
        given,
        clock,
    )
}

/// Where the answer of a domain thread's job goes.
type Answer = JsDeferred<String, Box<dyn FnOnce(Env) -> napi::Result<String>>>;

/// A job for a domain's thread.
enum Job {
    /// One call, and where its answer goes.
    Call {
        name: String,
        input: String,
        args: String,
        time: Option<f64>,
        answer: Answer,
    },
    /// Closes the domain (its maintenance lock goes), then answers.
    Close(Answer),
}

/// What runs a domain's calls.
enum Runner {
    /// On the JavaScript thread; `closing` once closed from the call under
    /// way's own algorithm: the domain closes as that call answers.
    Here {
        handle: RefCell<Option<Box<Handle>>>,
        closing: Cell<bool>,
    },
    /// On the domain's thread; `None` once closed. `waiting` counts the
    /// caller's algorithms' promises the thread waits for.
    Thread {
        jobs: RefCell<Option<mpsc::Sender<Job>>>,
        waiting: Arc<AtomicUsize>,
    },
}

/// One agent's domain.
#[napi]
pub struct NativeDomain {
    runner: Runner,
    /// How the domain is open: `online` or `maintenance`.
    mode: &'static str,
}

#[napi]
impl NativeDomain {
    /// Opens the domain `settings` (JSON) name in `store`, whose calls
    /// answer at once on this thread. `algorithms`: the caller's dispatcher,
    /// `given` the names of the algorithms it gives (`summarizer`,
    /// `ranker`, `tokenizer`, `embedder`); `clock`: whether each call comes
    /// with the time of the caller's clock.
    #[napi(factory)]
    pub fn open(
        env: Env,
        store: &NativeStore,
        settings: String,
        algorithms: Option<Function<Args, String>>,
        given: Vec<String>,
        clock: bool,
    ) -> napi::Result<Self> {
        let caller = Caller::of_sync(&env, algorithms)?;
        let handle = Handle::open(&store.store()?, &settings, plugins(caller, &given, clock))
            .map_err(|e| error(e.framed()))?;
        Ok(NativeDomain {
            mode: handle.mode(),
            runner: Runner::Here {
                handle: RefCell::new(Some(Box::new(handle))),
                closing: Cell::new(false),
            },
        })
    }

    /// Opens the domain as [`NativeDomain::open`] does, on a thread of its
    /// own: its calls answer promises ([`NativeDomain::call_async`]), and
    /// the caller's algorithms may answer promises. Answers a promise of
    /// the domain.
    #[napi(factory)]
    pub fn open_async(
        store: &NativeStore,
        settings: String,
        algorithms: Option<Function<Args, Promise<String>>>,
        given: Vec<String>,
        clock: bool,
    ) -> napi::Result<Self> {
        let waiting = Arc::new(AtomicUsize::new(0));
        let caller = Caller::of_async(algorithms, &waiting)?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let (opened, opening) = mpsc::channel();
        let store = store.store()?;
        let thread_plugins = plugins(caller, &given, clock);
        std::thread::Builder::new()
            .name("engram-domain".into())
            .spawn(move || {
                let mut handle = match Handle::open(&store, &settings, thread_plugins) {
                    Ok(handle) => {
                        let _ = opened.send(Ok(handle.mode()));
                        handle
                    }
                    Err(e) => {
                        let _ = opened.send(Err(e));
                        return;
                    }
                };
                for job in queue {
                    let (name, input, args, time, answer) = match job {
                        Job::Call {
                            name,
                            input,
                            args,
                            time,
                            answer,
                        } => (name, input, args, time, answer),
                        Job::Close(answer) => {
                            drop(handle);
                            answer.resolve(Box::new(|_| Ok(String::new())));
                            return;
                        }
                    };
                    let framed = handle
                        .call(&name, &input, &args, time.map(|t| t as i64))
                        .unwrap_or_else(|failure| failure.framed());
                    answer.resolve(Box::new(move |_| Ok(framed)));
                }
            })
            .map_err(|e| error(format!("starting the domain's thread: {e}")))?;
        let mode = opening
            .recv()
            .map_err(|_| error("the domain's thread stopped while opening it"))?
            .map_err(|e| error(e.framed()))?;
        Ok(NativeDomain {
            mode,
            runner: Runner::Thread {
                jobs: RefCell::new(Some(jobs)),
                waiting,
            },
        })
    }

    /// How the domain is open: `online` or `maintenance`.
    #[napi(getter)]
    pub fn mode(&self) -> &'static str {
        self.mode
    }

    /// Makes the call `name` (the binding's: a surface call, `audit`,
    /// `forget`, `domains`, `unlock`) with `args`; `input` names the input
    /// in an input failure; `time` is the caller's clock, when the domain
    /// has one. Answers the framed answer, a failure of the host among them
    /// (`S`, `K`, `F`, or `C` for a closed domain).
    #[napi(catch_unwind)]
    pub fn call(
        &self,
        name: String,
        input: String,
        args: String,
        time: Option<f64>,
    ) -> napi::Result<String> {
        let Runner::Here { handle, closing } = &self.runner else {
            return Err(error("this domain answers promises: use callAsync"));
        };
        let Ok(mut held) = handle.try_borrow_mut() else {
            return Ok(engram_binding::busy());
        };
        let Some(handle) = held.as_mut() else {
            return Ok(engram_binding::closed());
        };
        let answer = handle.call(&name, &input, &args, time.map(|t| t as i64));
        if closing.replace(false) {
            held.take();
        }
        Ok(answer.unwrap_or_else(|failure| failure.framed()))
    }

    /// [`NativeDomain::call`] on the domain's thread: a promise of the
    /// framed answer.
    #[napi]
    pub fn call_async<'env>(
        &self,
        env: &'env Env,
        name: String,
        input: String,
        args: String,
        time: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let Runner::Thread { jobs, .. } = &self.runner else {
            return Err(error("this domain answers at once: use call"));
        };
        let (answer, promise) = env.create_deferred()?;
        let job = Job::Call {
            name,
            input,
            args,
            time,
            answer,
        };
        if let Some(Job::Call { answer, .. }) = send(jobs.borrow().as_ref(), job) {
            answer.resolve(Box::new(|_| Ok(engram_binding::closed())));
        }
        Ok(promise)
    }

    /// [`NativeDomain::close`] of a domain on its own thread: a promise
    /// settled once the domain is closed (calls made before it answered
    /// first). While the thread waits for an algorithm's promise (a close
    /// from the algorithm itself, which that call waits for), settled at
    /// once: the domain closes as its calls answer.
    #[napi]
    pub fn close_async<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let (answer, promise) = env.create_deferred()?;
        let jobs = match &self.runner {
            Runner::Thread { jobs, waiting } => {
                let jobs = jobs.borrow_mut().take();
                if waiting.load(Ordering::SeqCst) > 0 {
                    drop(jobs);
                    None
                } else {
                    jobs
                }
            }
            Runner::Here { .. } => None,
        };
        match jobs {
            Some(jobs) => {
                if let Some(Job::Close(answer)) = send(Some(&jobs), Job::Close(answer)) {
                    answer.resolve(Box::new(|_| Ok(String::new())));
                }
            }
            None => {
                self.close();
                answer.resolve(Box::new(|_| Ok(String::new())));
            }
        }
        Ok(promise)
    }

    /// Closes the domain: its maintenance lock goes, and its store when no
    /// other domain holds it. Calls under way on its thread finish first;
    /// closed from the call under way's own algorithm, the domain closes as
    /// that call answers.
    #[napi]
    pub fn close(&self) {
        match &self.runner {
            Runner::Here { handle, closing } => match handle.try_borrow_mut() {
                Ok(mut handle) => drop(handle.take()),
                Err(_) => closing.set(true),
            },
            Runner::Thread { jobs, .. } => {
                jobs.borrow_mut().take();
            }
        }
    }
}

/// Sends `job` to a domain's thread: the job back when it could not go
/// (the domain is closed).
fn send(jobs: Option<&mpsc::Sender<Job>>, job: Job) -> Option<Job> {
    match jobs {
        Some(jobs) => jobs.send(job).err().map(|unsent| unsent.0),
        None => Some(job),
    }
}

/// Whether [`main`] runs now: the command line holds the process's
/// standard streams while it runs.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// Runs the `engram` command line `argv` (the program's name first) in
/// this process, as the native `engram` binary does: its exit code. The
/// package's `bin/engram.js` runs it.
#[napi]
pub fn main(argv: Vec<String>) -> napi::Result<u32> {
    if RUNNING.swap(true, Ordering::SeqCst) {
        return Err(error("the command line is already running in this process"));
    }
    let code = engram_binding::main(argv);
    RUNNING.store(false, Ordering::SeqCst);
    Ok(u32::from(code))
}
