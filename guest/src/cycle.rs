//! Execution cycles (B-005): plan validation, then stage-by-stage steps whose
//! outputs and staged writes live in the cycle resource only (B5-F5), and one
//! atomic commit when every step succeeded (B5-D1).

use crate::bindings::engram::memory::audit::{self, Operation, Outcome};
use crate::bindings::engram::memory::domain::{self, AccessMode};
use crate::bindings::engram::memory::embedder::Model;
use crate::bindings::engram::memory::ranker::{self, Candidate};
use crate::bindings::engram::memory::summarizer;
use crate::bindings::engram::memory::tokenizer;
use crate::bindings::engram::memory::types::{
    Event, EventPayload, IngestedMemory, MemoryRecord, RecordType, SourceActor, SourceComponent,
    WriteSource,
};
use crate::bindings::exports::engram::memory::cycle::{
    AssembledPrompt, Cycle, CycleError, Damage, ExecutionPlan, Guest, GuestCycle, PlanError,
    PlanErrorKind, PlanStep, RetrievedMemory, Stage, StepKind, StepOutput, StepResult,
    SummarizeInput, Summarized, TurnInput,
};
use crate::writer::{self, Write, Written};
use crate::{Engine, Now, Stored, get, keys, load_with, validate, vectors};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

impl Guest for Engine {
    type Cycle = CycleResource;
}

const STAGES: [Stage; 4] = [
    Stage::ContextSelect,
    Stage::PromptAssemble,
    Stage::SummarizeMemory,
    Stage::PersistMemory,
];

fn stage_index(stage: Stage) -> usize {
    STAGES.iter().position(|s| *s == stage).unwrap_or(0)
}

/// One cycle: the plan, and everything the steps produced so far.
pub struct CycleResource {
    plan: ExecutionPlan,
    session_ref: String,
    request_id: String,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// The index in `STAGES` of the first stage that has not run.
    next_stage: usize,
    closed: bool,
    outputs: HashMap<String, StepOutput>,
    user_message: Option<String>,
    model_response: Option<String>,
    /// Memories staged by PersistMemory steps: step name, memory, timestamp.
    staged: Vec<(String, IngestedMemory, i64)>,
}

impl State {
    /// Fails the cycle: nothing it produced survives (B5-D1).
    fn fail(&mut self, error: CycleError) -> CycleError {
        self.closed = true;
        self.outputs.clear();
        self.staged.clear();
        self.user_message = None;
        self.model_response = None;
        error
    }
}

impl GuestCycle for CycleResource {
    fn begin(
        plan: ExecutionPlan,
        session_ref: String,
        request_id: String,
    ) -> Result<Cycle, PlanError> {
        validate_plan(&plan)?;
        Ok(Cycle::new(CycleResource {
            plan,
            session_ref,
            request_id,
            state: RefCell::new(State::default()),
        }))
    }

    fn run_stage(&self, stage: Stage, input: TurnInput) -> Result<Vec<StepResult>, CycleError> {
        let mut state = self.state.borrow_mut();
        if state.closed {
            return Err(CycleError::Closed);
        }
        let index = stage_index(stage);
        let skipped_work = STAGES[state.next_stage.min(index)..index]
            .iter()
            .any(|s| self.plan.steps.iter().any(|step| step.stage == *s));
        if index < state.next_stage || skipped_work {
            return Err(state.fail(CycleError::StageOutOfOrder));
        }
        if let Some(message) = input.user_message {
            state.user_message = Some(message);
        }
        if let Some(response) = input.model_response {
            state.model_response = Some(response);
        }
        let mut results = Vec::new();
        for step in self.plan.steps.iter().filter(|s| s.stage == stage) {
            match self.run_step(step, &mut state) {
                Ok(output) => {
                    state.outputs.insert(step.name.clone(), output.clone());
                    results.push(StepResult {
                        step: step.name.clone(),
                        output,
                    });
                }
                Err(error) => return Err(state.fail(error)),
            }
        }
        state.next_stage = index + 1;
        Ok(results)
    }

    fn output(&self, step: String) -> Option<StepOutput> {
        self.state.borrow().outputs.get(&step).cloned()
    }

    fn commit(&self) -> Result<Vec<String>, CycleError> {
        let mut state = self.state.borrow_mut();
        if state.closed {
            return Err(CycleError::Closed);
        }
        let unfinished = STAGES[state.next_stage..]
            .iter()
            .any(|s| self.plan.steps.iter().any(|step| step.stage == *s));
        if unfinished {
            return Err(state.fail(CycleError::Unfinished));
        }
        let staged = std::mem::take(&mut state.staged);
        let answer = self.persist(&staged);
        state.closed = true;
        answer.map_err(|error| state.fail(error))
    }
}

impl CycleResource {
    fn run_step(&self, step: &PlanStep, state: &mut State) -> Result<StepOutput, CycleError> {
        let input = |i: usize| {
            step.inputs
                .get(i)
                .and_then(|name| state.outputs.get(name))
                .cloned()
        };
        match &step.kind {
            StepKind::SummarizeMemory(what) => {
                let message = state
                    .user_message
                    .clone()
                    .ok_or_else(|| CycleError::MissingInput("user-message".into()))?;
                let response = match what {
                    SummarizeInput::UserMessage => None,
                    SummarizeInput::Turn => Some(
                        state
                            .model_response
                            .clone()
                            .ok_or_else(|| CycleError::MissingInput("model-response".into()))?,
                    ),
                };
                summarize(&message, response.as_deref()).map(StepOutput::Summarized)
            }
            StepKind::RetrieveMemory => {
                let Some(StepOutput::Summarized(query)) = input(0) else {
                    return Err(CycleError::MissingInput(step.inputs.join(",")));
                };
                let top_k = self.plan.metadata.top_k.unwrap_or(0);
                let question = state.user_message.clone().unwrap_or_default();
                self.retrieve(&step.name, &query.keywords, &question, top_k)
                    .map(StepOutput::Retrieved)
            }
            StepKind::ContextSelect => match input(0) {
                // Only the complete result of a RetrieveMemory that succeeded
                // exists to be selected (B5-D3): a failure ended the cycle.
                Some(StepOutput::Retrieved(memories)) => Ok(StepOutput::Selected(memories)),
                _ => Err(CycleError::MissingInput(step.inputs.join(","))),
            },
            StepKind::PromptAssemble => {
                let Some(StepOutput::Selected(context)) = input(0) else {
                    return Err(CycleError::MissingInput(step.inputs.join(",")));
                };
                let message = state
                    .user_message
                    .as_deref()
                    .ok_or_else(|| CycleError::MissingInput("user-message".into()))?;
                assemble(context, message, self.plan.metadata.token_budget).map(StepOutput::Prompt)
            }
            StepKind::PersistMemory => {
                let Some(StepOutput::Summarized(summary)) = input(0) else {
                    return Err(CycleError::MissingInput(step.inputs.join(",")));
                };
                // An empty summary: the turn had nothing worth keeping, and
                // nothing is staged for it.
                if !summary.summary.is_empty() {
                    let memory = IngestedMemory {
                        session_ref: self.session_ref.clone(),
                        summary: summary.summary.clone(),
                        keywords: summary.keywords.clone(),
                    };
                    state
                        .staged
                        .push((step.name.clone(), memory, domain::now()));
                }
                Ok(StepOutput::Staged(summary))
            }
        }
    }

    /// Finds candidates through the keyword index, reading at most the
    /// host's candidate limit of entries, and has the ranker order them.
    fn retrieve(
        &self,
        step: &str,
        keywords: &[String],
        question: &str,
        top_k: u32,
    ) -> Result<Vec<RetrievedMemory>, CycleError> {
        // A step's request id: the cycle's and the step's (S-CYCLE).
        let request_id = format!("{}#{step}", self.request_id);
        let answer = gather_and_rank(keywords, question, top_k);
        let outcome = match &answer {
            Ok((memories, gathered)) => Outcome::Retrieved(audit::Retrieval {
                returned: memories.len() as u32,
                entries_read: gathered.entries_read,
                candidates: gathered.candidates,
                bound_reached: gathered.bound_reached,
                by_meaning: gathered.by_meaning,
            }),
            Err((_, reason)) => Outcome::Failed(reason.clone()),
        };
        audit::append(&audit::Entry {
            request_id,
            operation: Operation::Read,
            source: None,
            record_type: Some(RecordType::Event),
            outcome,
        });
        answer
            .map(|(memories, _)| memories)
            .map_err(|(error, _)| error)
    }

    /// Stores every staged memory in one commit (B5-D1, B5-F2).
    fn persist(&self, staged: &[(String, IngestedMemory, i64)]) -> Result<Vec<String>, CycleError> {
        if staged.is_empty() {
            return Ok(Vec::new());
        }
        let source = WriteSource {
            agent_id: domain::agent(),
            component: SourceComponent::Cognition,
            actor: SourceActor::System,
        };
        let entry = |request_id: &str, outcome: Outcome| write_entry(&source, request_id, outcome);
        let requests = self.staged_writes(staged);
        let reject_all = |why: &String| {
            for (request_id, _) in &requests {
                audit::append(&entry(request_id, Outcome::Rejected(why.clone())));
            }
        };
        // The staged summaries' vectors, one call, checked against the
        // domain's model before anything is written (S-VECTOR); a failure
        // is audited as every write's, like a refused commit.
        let mut embedded = match embed_staged(staged) {
            Ok(embedded) => embedded.into_iter(),
            Err((error, why)) => {
                reject_all(&why);
                return Err(error);
            }
        };
        let answer = match commit_refusal(&requests) {
            Some(why) => Err(why),
            None => {
                let writes: Vec<Write<'_>> = requests
                    .iter()
                    .map(|(request_id, record)| Write {
                        request_id,
                        source: &source,
                        record,
                        by_cycle: true,
                        embedded: embedded.next(),
                    })
                    .collect();
                // The entries of what the cycle stores go into its commit.
                writer::write_all(&writes, |written| {
                    requests
                        .iter()
                        .zip(written)
                        .map(|((request_id, _), w)| entry(request_id, crate::accepted(w)))
                        .collect()
                })
            }
        };
        match answer {
            Ok(committed) => {
                if !committed.audited {
                    for ((request_id, _), w) in requests.iter().zip(&committed.written) {
                        audit::append(&entry(request_id, crate::accepted(w)));
                    }
                }
                Ok(committed
                    .written
                    .into_iter()
                    .map(Written::into_id)
                    .collect())
            }
            Err(reason) => {
                reject_all(&reason);
                Err(CycleError::CommitFailed)
            }
        }
    }

    /// The records of the staged memories, each with its request id: the
    /// cycle's, `#` and the step's name.
    fn staged_writes(
        &self,
        staged: &[(String, IngestedMemory, i64)],
    ) -> Vec<(String, MemoryRecord)> {
        staged
            .iter()
            .map(|(step, memory, timestamp)| {
                let record = MemoryRecord::Event(Event {
                    timestamp: *timestamp,
                    payload: EventPayload::Ingested(memory.clone()),
                });
                (format!("{}#{step}", self.request_id), record)
            })
            .collect()
    }
}

/// The audit entry of a write of a cycle's.
fn write_entry(source: &WriteSource, request_id: &str, outcome: Outcome) -> audit::Entry {
    audit::Entry {
        request_id: request_id.to_owned(),
        operation: Operation::Write,
        source: Some(source.clone()),
        record_type: Some(RecordType::Event),
        outcome,
    }
}

/// Why a cycle may not commit `requests`: the domain is in maintenance
/// mode (IO-W7), or a record is not valid.
fn commit_refusal(requests: &[(String, MemoryRecord)]) -> Option<String> {
    if domain::mode() != AccessMode::Online {
        return Some(
            "COGNITION may not write while the domain is in maintenance mode (IO-W7)".into(),
        );
    }
    requests
        .iter()
        .find_map(|(_, record)| validate::record(record).err())
        .map(|why| format!("invalid record: {why}"))
}

fn summarize(message: &str, response: Option<&str>) -> Result<Summarized, CycleError> {
    let summary = summarizer::summarize(message, response).map_err(CycleError::SummarizerFailed)?;
    let refused = |why: &str| Err(CycleError::SummaryRefused(why.into()));
    // Nothing worth remembering: an empty summary with no keywords, which
    // retrieves nothing and is never persisted.
    if summary.summary.is_empty() && summary.keywords.is_empty() {
        return Ok(Summarized {
            summary: summary.summary,
            keywords: summary.keywords,
        });
    }
    if summary.summary.trim().is_empty() {
        return refused("the summary is empty but has keywords");
    }
    if summary.summary.len() > validate::MAX_SUMMARY_LEN {
        return refused("the summary is longer than 4,096 bytes");
    }
    if summary.keywords.len() > validate::MAX_KEYWORDS {
        return refused("more than 128 keywords");
    }
    if summary.keywords.iter().any(|k| k.is_empty()) {
        return refused("a keyword is empty");
    }
    if summary
        .keywords
        .iter()
        .any(|k| k.len() > validate::MAX_KEYWORD_LEN)
    {
        return refused("a keyword is too long");
    }
    // A text of one word can only be kept by naming it; any longer text
    // must not come through whole.
    let verbatim =
        |raw: &str| raw.split_whitespace().nth(1).is_some() && summary.summary.contains(raw.trim());
    if verbatim(message) || response.is_some_and(verbatim) {
        return refused("the summary holds the raw text verbatim (B5-S1)");
    }
    Ok(Summarized {
        summary: summary.summary,
        keywords: summary.keywords,
    })
}

type Failure = (CycleError, String);

/// What gathering read.
struct Gathered {
    entries_read: u32,
    candidates: u32,
    bound_reached: bool,
    /// How many candidates came by meaning alone; none when by keywords
    /// alone.
    by_meaning: Option<u32>,
}

/// A failure of the host's embedder (B5-F1).
fn embedder_failed(why: String) -> Failure {
    (
        CycleError::EmbedderFailed(why.clone()),
        format!("the embedder failed: {why}"),
    )
}

/// The host's embedder's model and the domain's vectors' model, when the
/// host has an embedder; the domain's vectors of another model refuse it
/// (checked before the embedder is asked for anything).
fn models() -> Result<Option<(Model, Option<vectors::DomainModel>)>, Failure> {
    let Some(model) = vectors::host_model().map_err(embedder_failed)? else {
        return Ok(None);
    };
    let domain = vectors::domain_model(get).map_err(|why| (CycleError::StorageUnavailable, why))?;
    if let Some(domain) = domain.as_ref().filter(|d| d.model != model) {
        let why = vectors::changed(&domain.model, &model);
        return Err((CycleError::ModelChanged((domain.model.clone(), model)), why));
    }
    Ok(Some((model, domain)))
}

/// The vectors of a cycle's staged memories, with the host's embedder, of
/// the domain's model; none without an embedder.
fn embed_staged(
    staged: &[(String, IngestedMemory, i64)],
) -> Result<Vec<writer::Embedded>, Failure> {
    let Some((model, _)) = models()? else {
        return Ok(Vec::new());
    };
    let summaries: Vec<String> = staged.iter().map(|(_, m, _)| m.summary.clone()).collect();
    crate::embed_passages(&model, &summaries).map_err(embedder_failed)
}

/// The question's vector and the domain's generation of vectors, when
/// recall is also by meaning (S-VECTOR): none when the host has no embedder
/// or the domain no vectors. The question is embedded whenever the host has
/// an embedder, so one that fails fails the recall (B5-F1) whatever the
/// domain holds; a domain of another model refuses it.
fn meaning(question: &str) -> Result<Option<(vectors::DomainModel, Vec<f32>)>, Failure> {
    let Some((model, domain)) = models()? else {
        return Ok(None);
    };
    let query = vectors::embed(&model, &[question.to_owned()], vectors::QUERY)
        .map_err(embedder_failed)?
        .pop()
        .ok_or_else(|| embedder_failed("no vector for the question".into()))?;
    Ok(domain.map(|domain| (domain, query)))
}

/// How many of the candidate limit's candidates are gathered by meaning
/// when recall is also by meaning: a quarter (at least one, and one less
/// than the limit, so that words keep at least one), the rest by words, so
/// that the candidates stay within the limit.
fn by_meaning_share(limit: u32) -> u32 {
    limit.div_ceil(4).min(limit.saturating_sub(1))
}

/// The `n` memories most alike in meaning to the question (`query`, its
/// vector) and the similarity of each of `known` that has a vector.
fn by_meaning(
    domain: &vectors::DomainModel,
    query: &[f32],
    n: u32,
    known: &HashSet<String>,
) -> Result<vectors::Nearest, Failure> {
    let storage = |why: String| (CycleError::StorageUnavailable, why);
    let page = domain::read_limit_ceiling().max(n).max(1);
    let dimension = domain.model.dimension as usize;
    vectors::nearest(domain.generation, dimension, query, n as usize, page, known).map_err(storage)
}

/// Gathers candidates through the keyword index (S-GATHER), fairly: the candidate
/// limit is shared out in rounds among the query's keywords that still have
/// entries, each taking an equal share (the rest of a division going to the
/// first in the query's order), newest first within each keyword, until the
/// limit is spent or every keyword is exhausted. No keyword can take the
/// whole budget while another has entries left, and nothing here judges
/// which keyword matters (B5-F3).
fn gather(keywords: &[String], limit: u32) -> Result<(Vec<String>, Gathered), Failure> {
    let storage = |why: String| (CycleError::StorageUnavailable, why);
    let mut budget = limit;
    let mut seen = HashSet::new();
    let mut ids = Vec::new();
    // Each distinct keyword once, in the query's order, with the end of the
    // range it has not read yet (scans go newest first, so downwards).
    let mut active: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut distinct = HashSet::new();
    for keyword in keywords {
        if distinct.insert(keyword.as_str()) {
            active.push(keys::keyword_range(keyword));
        }
    }
    while budget > 0 && !active.is_empty() {
        let share = (budget / active.len() as u32).max(1);
        let mut extra = budget.saturating_sub(share * active.len() as u32);
        let mut still = Vec::with_capacity(active.len());
        for (start, end) in active {
            if budget == 0 {
                break;
            }
            let want = (share + u32::from(extra > 0)).min(budget);
            extra = extra.saturating_sub(1);
            let entries = crate::persistence::scan(
                &start,
                &end,
                want,
                crate::persistence::Direction::Descending,
            )
            .map_err(|e| storage(crate::storage(e)))?;
            budget -= entries.len() as u32;
            let full = entries.len() as u32 == want;
            let last = entries.last().map(|e| e.key.clone());
            for entry in entries {
                let id = String::from_utf8(entry.value)
                    .map_err(|_| storage("a keyword-index entry is damaged".into()))?;
                if seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
            match last {
                // It may have more: it stays for the next round.
                Some(last) if full => still.push((start, last)),
                _ => {}
            }
        }
        active = still;
    }
    let gathered = Gathered {
        entries_read: limit - budget,
        candidates: ids.len() as u32,
        bound_reached: budget == 0 && !active.is_empty(),
        by_meaning: None,
    };
    Ok((ids, gathered))
}

fn gather_and_rank(
    keywords: &[String],
    question: &str,
    top_k: u32,
) -> Result<(Vec<RetrievedMemory>, Gathered), Failure> {
    let Found {
        ids,
        similarity,
        gathered,
    } = gather_by_words_and_meaning(keywords, question)?;
    let candidates = candidates(&ids, &similarity)?;
    if candidates.is_empty() {
        return Ok((Vec::new(), gathered));
    }
    Ok((ranked(keywords, &candidates, top_k)?, gathered))
}

/// The candidates' ids as they were gathered.
struct Found {
    ids: Vec<String>,
    /// The similarity of each found by meaning, or scored by it.
    similarity: HashMap<String, f32>,
    gathered: Gathered,
}

/// The ids of the candidates: those the keywords' index entries give,
/// then, when the host embeds, those nearest in meaning to `question` (a
/// share of the candidate limit), with their similarity.
fn gather_by_words_and_meaning(keywords: &[String], question: &str) -> Result<Found, Failure> {
    let limit = domain::candidate_limit().max(1);
    let meaning = meaning(question)?;
    let dense = if meaning.is_some() {
        by_meaning_share(limit)
    } else {
        0
    };
    let (mut ids, mut gathered) = gather(keywords, limit - dense)?;
    let mut similarity: HashMap<String, f32> = HashMap::new();
    let known: HashSet<String> = ids.iter().cloned().collect();
    if let Some((domain, query)) = meaning {
        let (nearest, of_known) = by_meaning(&domain, &query, dense, &known)?;
        let mut more = 0;
        for (id, s) in nearest {
            if !known.contains(&id) {
                ids.push(id.clone());
                more += 1;
            }
            similarity.insert(id, s);
        }
        similarity.extend(of_known);
        gathered.by_meaning = Some(more);
    }
    Ok(Found {
        ids,
        similarity,
        gathered,
    })
}

/// The candidates `ids` name that have not expired, newest first, so
/// every ranker sees them in one stable order.
fn candidates(
    ids: &[String],
    similarity: &HashMap<String, f32>,
) -> Result<Vec<Candidate>, Failure> {
    let storage = |why: String| (CycleError::StorageUnavailable, why);
    let mut candidates = Vec::with_capacity(ids.len());
    let mut now = Now::default();
    // Every candidate's record in as few calls as the host allows.
    let mut records = writer::Batch::default();
    records
        .read_ahead(ids.iter().map(|id| keys::record(id)).collect())
        .map_err(storage)?;
    for id in ids {
        match load_with(id, |key| records.get(key)).map_err(storage)? {
            // An expired memory is no candidate: its index entries wait
            // for maintenance to remove them.
            Some((_, expires_at)) if now.passed(expires_at) => {}
            Some((
                Stored::Event {
                    id,
                    event:
                        Event {
                            timestamp,
                            payload: EventPayload::Ingested(memory),
                        },
                },
                _,
            )) => candidates.push(Candidate {
                similarity: similarity.get(&id).copied(),
                id,
                summary: memory.summary,
                keywords: memory.keywords,
                timestamp,
            }),
            _ => {
                return Err(storage(format!("an index entry for {id} points nowhere")));
            }
        }
    }
    candidates.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| b.id.cmp(&a.id)));
    Ok(candidates)
}

/// The ranker's `top_k` of `candidates`, best first; its answer is
/// checked: no more than asked, no id twice, none not a candidate's.
fn ranked(
    keywords: &[String],
    candidates: &[Candidate],
    top_k: u32,
) -> Result<Vec<RetrievedMemory>, Failure> {
    let ranked = ranker::rank(keywords, candidates, top_k).map_err(|why| {
        (
            CycleError::RankerFailed(why.clone()),
            format!("ranker failed: {why}"),
        )
    })?;
    let damaged = |damage: Damage| {
        (
            CycleError::RankingDamaged(damage),
            format!("the ranker's answer was damaged: {damage:?}"),
        )
    };
    if ranked.len() > top_k as usize {
        return Err(damaged(Damage::TooMany));
    }
    let by_id: HashMap<&str, &Candidate> = candidates.iter().map(|c| (c.id.as_str(), c)).collect();
    let mut used = HashSet::new();
    let mut memories = Vec::with_capacity(ranked.len());
    for id in &ranked {
        let Some(candidate) = by_id.get(id.as_str()) else {
            return Err(damaged(Damage::UnknownId));
        };
        if !used.insert(id.as_str()) {
            return Err(damaged(Damage::DuplicateId));
        }
        memories.push(RetrievedMemory {
            id: candidate.id.clone(),
            summary: candidate.summary.clone(),
            timestamp: candidate.timestamp,
        });
    }
    Ok(memories)
}

/// The prompt: the memory lines of `context` that fit `budget` (all of them
/// without one), then the user's message.
fn assemble(
    context: Vec<RetrievedMemory>,
    message: &str,
    budget: Option<u32>,
) -> Result<AssembledPrompt, CycleError> {
    let lines: Vec<String> = context
        .iter()
        .map(|memory| {
            let time = crate::time::iso8601_utc(memory.timestamp);
            format!("- [{time}] {}", memory.summary)
        })
        .collect();
    let kept = match budget {
        Some(budget) => fitting(&lines, budget)?,
        None => lines.len(),
    };
    let mut text = String::from("Relevant memories:");
    if kept == 0 {
        text.push_str(" none");
    }
    for line in &lines[..kept] {
        text.push('\n');
        text.push_str(line);
    }
    text.push_str("\n\nUser: ");
    text.push_str(message);
    let mut context = context;
    let left_out = context.split_off(kept).len() as u32;
    Ok(AssembledPrompt {
        context,
        text,
        left_out,
    })
}

/// How many of `lines`, from the first, fit `budget` tokens joined by line
/// breaks, as the host's tokenizer counts them (B5-F3). The whole joined
/// text is counted each time, since a tokenizer's counts do not add up
/// across a join; the first line that would pass the budget ends it.
fn fitting(lines: &[String], budget: u32) -> Result<usize, CycleError> {
    let mut joined = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            joined.push('\n');
        }
        joined.push_str(line);
        let count = tokenizer::count_tokens(&joined).map_err(CycleError::TokenizerFailed)?;
        if count > budget {
            return Ok(i);
        }
    }
    Ok(lines.len())
}

/// Checks a plan before anything runs; the error names the step and rule.
fn validate_plan(plan: &ExecutionPlan) -> Result<(), PlanError> {
    let fail = |step: &PlanStep, rule: &str, kind: PlanErrorKind| PlanError {
        step: Some(step.name.clone()),
        rule: rule.into(),
        kind,
    };
    let mut seen: HashMap<&str, &PlanStep> = HashMap::new();
    let mut stage = 0;
    for step in &plan.steps {
        if seen.contains_key(step.name.as_str()) {
            return Err(fail(step, "B5-F4", PlanErrorKind::DuplicateName));
        }
        let index = stage_index(step.stage);
        if index < stage {
            return Err(fail(step, "B5-F4", PlanErrorKind::StageOutOfOrder));
        }
        stage = index;
        if let Some(rule) = wrong_stage(step) {
            return Err(fail(step, rule, PlanErrorKind::WrongStage));
        }
        for input in &step.inputs {
            if !seen.contains_key(input.as_str()) {
                let later = plan.steps.iter().any(|s| s.name == *input);
                let kind = if later {
                    PlanErrorKind::LaterInput(input.clone())
                } else {
                    PlanErrorKind::UnknownInput(input.clone())
                };
                return Err(fail(step, "B5-F4", kind));
            }
        }
        let inputs: Vec<&PlanStep> = step.inputs.iter().map(|i| seen[i.as_str()]).collect();
        if let Some(rule) = wrong_inputs(step, &inputs) {
            return Err(fail(
                step,
                rule,
                PlanErrorKind::WrongInput(step.inputs.join(",")),
            ));
        }
        seen.insert(&step.name, step);
    }
    if let Some(retrieve) = plan
        .steps
        .iter()
        .find(|s| s.kind == StepKind::RetrieveMemory)
    {
        let ceiling = domain::read_limit_ceiling().max(1);
        match plan.metadata.top_k {
            None => return Err(fail(retrieve, "B5-P4", PlanErrorKind::MissingTopK)),
            Some(0) => return Err(fail(retrieve, "B5-P4", PlanErrorKind::ZeroTopK)),
            Some(k) if k > ceiling => {
                return Err(fail(
                    retrieve,
                    "IO-G6",
                    PlanErrorKind::TopKOutOfBounds(ceiling),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(budget) = plan.metadata.token_budget {
        let whole = |kind| PlanError {
            step: None,
            rule: "B5-P4".into(),
            kind,
        };
        match plan
            .steps
            .iter()
            .find(|s| s.kind == StepKind::PromptAssemble)
        {
            None => return Err(whole(PlanErrorKind::UnusedTokenBudget)),
            Some(prompt) if budget == 0 => {
                return Err(fail(prompt, "B5-P4", PlanErrorKind::ZeroTokenBudget));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The rule a step breaks by running in its stage, if any.
fn wrong_stage(step: &PlanStep) -> Option<&'static str> {
    let ok = match (&step.kind, step.stage) {
        (StepKind::RetrieveMemory, Stage::ContextSelect) => true,
        (StepKind::RetrieveMemory | StepKind::PersistMemory, Stage::PromptAssemble) => {
            return Some("B5-P3"); // the prompt stage never touches the store
        }
        (StepKind::RetrieveMemory, _) => return Some("B5-P3"),
        (StepKind::SummarizeMemory(SummarizeInput::UserMessage), Stage::ContextSelect) => true,
        (StepKind::SummarizeMemory(SummarizeInput::Turn), Stage::SummarizeMemory) => true,
        (StepKind::SummarizeMemory(_), _) => return Some("B5-P1"),
        (StepKind::ContextSelect, Stage::ContextSelect) => true,
        (StepKind::ContextSelect, _) => return Some("B5-D3"),
        (StepKind::PromptAssemble, Stage::PromptAssemble) => true,
        (StepKind::PromptAssemble, _) => return Some("B5-P3"),
        (StepKind::PersistMemory, Stage::PersistMemory) => true,
        (StepKind::PersistMemory, _) => return Some("B5-D1"),
    };
    (!ok).then_some("B5-P3")
}

/// The rule a step breaks by the outputs it takes, if any.
fn wrong_inputs(step: &PlanStep, inputs: &[&PlanStep]) -> Option<&'static str> {
    let one = |kind: &dyn Fn(&StepKind) -> bool| inputs.len() == 1 && kind(&inputs[0].kind);
    match step.kind {
        StepKind::SummarizeMemory(_) => (!inputs.is_empty()).then_some("B5-P1"),
        StepKind::RetrieveMemory => {
            (!one(&|k| matches!(k, StepKind::SummarizeMemory(_)))).then_some("B5-P2")
        }
        StepKind::ContextSelect => (!one(&|k| *k == StepKind::RetrieveMemory)).then_some("B5-D3"),
        StepKind::PromptAssemble => (!one(&|k| *k == StepKind::ContextSelect)).then_some("B5-P3"),
        StepKind::PersistMemory => {
            (!one(&|k| *k == StepKind::SummarizeMemory(SummarizeInput::Turn))).then_some("B5-F4")
        }
    }
}
