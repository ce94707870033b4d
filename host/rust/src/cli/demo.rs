//! `engram demo`: the sample conversation ingested through cycles (once per
//! store), then a question's ContextSelect and PromptAssemble from it.

use super::cycle::{Turn, run_cycle};
use super::output::{print_lines, unprinted};
use super::{Exit, Global, OK, REFUSED, failure, open_domain};
use crate::binding as engram;
use engram::cycle::{Stage, StepOutput, TurnInput};
use engram::json;
use engram::types::PrivacyTier;

const CONVERSATION: &str = include_str!("../../../../samples/conversation.jsonl");
const DEMO_AGENT: &str = "demo";

#[derive(serde::Deserialize)]
struct SampleTurn {
    session_ref: String,
    user: String,
    assistant: String,
}

/// Runs the demo on `store`.
pub(super) fn demo(store: &str, question: &str, token_budget: Option<u32>) -> Result<u8, Exit> {
    let global = Global {
        store: store.to_owned(),
        ceiling: PrivacyTier::Private,
    };
    let mut domain = open_domain(&global, DEMO_AGENT, true)?;
    if ingested(&mut domain)? {
        print_lines(vec![format!(
            "# the sample conversation is already in {store}"
        )])?;
    } else {
        print_lines(vec![format!(
            "# ingesting the sample conversation into {store} (agent \"{DEMO_AGENT}\")"
        )])?;
        let code = ingest(&mut domain)?;
        if code != OK {
            return Ok(code);
        }
    }
    answer(&mut domain, question, token_budget)
}

/// Whether the domain holds the sample conversation already.
fn ingested(domain: &mut engram::Domain) -> Result<bool, Exit> {
    let latest = engram::io::ReadRequest {
        record_type: engram::types::RecordType::Event,
        selector: engram::io::ReadSelector::Latest(engram::io::Latest { limit: 1 }),
        request_id: "demo-check".into(),
    };
    Ok(domain
        .read(&latest)
        .map_err(failure)?
        .map(|r| !r.records.is_empty())
        .unwrap_or(false))
}

/// Runs the ingest plan on each turn of the sample conversation, printing
/// each turn's lines.
fn ingest(domain: &mut engram::Domain) -> Result<u8, Exit> {
    let ingest = engram::plans::ingest();
    for (i, line) in CONVERSATION.lines().enumerate() {
        let sample: SampleTurn = serde_json::from_str(line).map_err(failure)?;
        let input = TurnInput {
            user_message: Some(sample.user),
            model_response: Some(sample.assistant),
        };
        let turn = Turn {
            session: &sample.session_ref,
            request_id: &format!("demo-turn-{i}"),
            input: &input,
        };
        let mut lines = Vec::new();
        let code = run_cycle(domain, &ingest, &turn, &mut |line| {
            lines.push(line.to_string());
            Ok(())
        })?;
        print_lines(lines)?;
        if code != OK {
            return Ok(code);
        }
    }
    Ok(OK)
}

/// Selects context for the question and assembles the prompt, printing
/// both; nothing is committed.
fn answer(
    domain: &mut engram::Domain,
    question: &str,
    token_budget: Option<u32>,
) -> Result<u8, Exit> {
    let mut recall = engram::plans::recall(3);
    recall.metadata.token_budget = token_budget;
    let mut lines = vec![format!("# question: {question}")];
    let cycle = match domain
        .begin_cycle(&recall, "demo", "demo-question")
        .map_err(failure)?
    {
        Ok(cycle) => cycle,
        Err(error) => {
            let why = anyhow::anyhow!("the demo plan was refused: {error:?}");
            return Err(failure(why));
        }
    };
    let input = TurnInput {
        user_message: Some(question.into()),
        model_response: None,
    };
    for stage in [Stage::ContextSelect, Stage::PromptAssemble] {
        if let Err(error) = domain.run_stage(&cycle, stage, &input).map_err(failure)? {
            lines.push(engram_surface::turns::cycle_refusal(&error).to_string());
            print_lines(lines)?;
            return Ok(REFUSED);
        }
    }
    if let Some(selected) = domain.step_output(&cycle, "select").map_err(failure)? {
        let selected = json::StepOutput::from(selected);
        lines.push("# ContextSelect".into());
        lines.push(serde_json::to_string_pretty(&selected).map_err(unprinted)?);
    }
    if let Some(StepOutput::Prompt(prompt)) =
        domain.step_output(&cycle, "prompt").map_err(failure)?
    {
        lines.push(format!("# PromptAssemble\n{}", prompt.text));
        if prompt.left_out > 0 {
            lines.push(format!("# the token budget left out {}", prompt.left_out));
        }
    }
    domain.drop_cycle(cycle).map_err(failure)?;
    print_lines(lines)?;
    Ok(OK)
}
