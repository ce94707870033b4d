fn main() -> anyhow::Result<()> {
    let mut alice = engram::Engram::new()?.open_store("engram.db", "alice")?;
    alice.remember("I booked the Hotel Avenida in Lisbon.", "Lovely!")?;
    println!("{}", alice.recall("Which hotel did I book?")?.prompt);
    Ok(())
}
