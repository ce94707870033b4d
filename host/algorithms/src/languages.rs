// The languages beside English the default summarizer knows, read by the
// summarizer (`summary.rs`) and by the build (`build.rs`), which writes
// their stop lists, and only theirs, into `OUT_DIR`.

/// The languages whose function words a side may be written in, beside
/// English: each one's code, the words of it that negate (kept whatever
/// its stop list says), and its first person as a subject (which becomes
/// the speaker's name).
const LANGUAGES: &[(&str, &str, &str)] = &[
    (
        "de",
        "nicht nichts kein keine keinem keinen keiner keines nie niemals ohne weder noch",
        "ich",
    ),
    (
        "fr",
        "ne n pas non jamais sans aucun aucune rien ni personne plus",
        "je j'",
    ),
    (
        "es",
        "no nunca jamás sin ni nada ningún ninguna ninguno tampoco nadie",
        "yo",
    ),
    (
        "it",
        "non mai senza né niente nessun nessuno nessuna nulla",
        "io",
    ),
    (
        "pt",
        "não nunca jamais sem nem nada nenhum nenhuma ninguém",
        "eu",
    ),
    ("nl", "niet geen nooit zonder niets niemand noch", "ik"),
    (
        "sv",
        "inte ej inga ingen inget aldrig utan ingenting",
        "jag",
    ),
    ("da", "ikke ingen intet aldrig uden", "jeg"),
    ("no", "ikke ingen intet aldri uten ingenting", "jeg"),
    ("ru", "не ни нет без никогда ничего никто", "я"),
];
