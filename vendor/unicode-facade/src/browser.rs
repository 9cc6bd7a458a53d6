//! `get_general_category` over the browser's Unicode data.

use wasm_bindgen::prelude::*;

#[cfg(target_feature = "atomics")]
compile_error!("the RegExp-backed general category assumes single-threaded wasm (no `atomics`)");

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = RegExp)]
    type JsRegExp;

    #[wasm_bindgen(constructor, js_class = "RegExp")]
    fn new(pattern: &str, flags: &str) -> JsRegExp;

    /// `exec` of the one pattern below: the group that matched names the category.
    #[wasm_bindgen(method, js_class = "RegExp", js_name = exec)]
    fn exec(this: &JsRegExp, text: &str) -> Option<Match>;

    /// What `exec` returns, read only for its groups.
    type Match;

    #[wasm_bindgen(method, indexing_getter)]
    fn get(this: &Match, index: u32) -> Option<String>;
}

/// Unicode's general categories, as the published crate names them (same order).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Hash, Eq, PartialEq)]
pub enum GeneralCategory {
    ClosePunctuation,
    ConnectorPunctuation,
    Control,
    CurrencySymbol,
    DashPunctuation,
    DecimalNumber,
    EnclosingMark,
    FinalPunctuation,
    Format,
    InitialPunctuation,
    LetterNumber,
    LineSeparator,
    LowercaseLetter,
    MathSymbol,
    ModifierLetter,
    ModifierSymbol,
    NonspacingMark,
    OpenPunctuation,
    OtherLetter,
    OtherNumber,
    OtherPunctuation,
    OtherSymbol,
    ParagraphSeparator,
    PrivateUse,
    SpaceSeparator,
    SpacingMark,
    Surrogate,
    TitlecaseLetter,
    Unassigned,
    UppercaseLetter,
}

use GeneralCategory::*;

/// Each category with its short name in `\p{…}`, in the order of the groups of [`PATTERN`].
const CATEGORIES: [(GeneralCategory, &str); 30] = [
    (LowercaseLetter, "Ll"),
    (UppercaseLetter, "Lu"),
    (OtherLetter, "Lo"),
    (DecimalNumber, "Nd"),
    (NonspacingMark, "Mn"),
    (SpacingMark, "Mc"),
    (EnclosingMark, "Me"),
    (TitlecaseLetter, "Lt"),
    (ModifierLetter, "Lm"),
    (LetterNumber, "Nl"),
    (OtherNumber, "No"),
    (ConnectorPunctuation, "Pc"),
    (DashPunctuation, "Pd"),
    (OpenPunctuation, "Ps"),
    (ClosePunctuation, "Pe"),
    (InitialPunctuation, "Pi"),
    (FinalPunctuation, "Pf"),
    (OtherPunctuation, "Po"),
    (MathSymbol, "Sm"),
    (CurrencySymbol, "Sc"),
    (ModifierSymbol, "Sk"),
    (OtherSymbol, "So"),
    (SpaceSeparator, "Zs"),
    (LineSeparator, "Zl"),
    (ParagraphSeparator, "Zp"),
    (Control, "Cc"),
    (Format, "Cf"),
    (Surrogate, "Cs"),
    (PrivateUse, "Co"),
    (Unassigned, "Cn"),
];

thread_local! {
    /// `^(?:(\p{Ll})|(\p{Lu})|…)$`, compiled once: one `exec` classifies a code point.
    static PATTERN: JsRegExp = {
        let groups: Vec<String> = CATEGORIES
            .iter()
            .map(|(_, name)| format!("(\\p{{gc={name}}})"))
            .collect();
        JsRegExp::new(&format!("^(?:{})$", groups.join("|")), "u")
    };
}

/// The general category of `chr`, by the browser's Unicode version (the published crate's tables
/// are Unicode 16.0; a browser's are that or newer).
pub fn get_general_category(chr: char) -> GeneralCategory {
    let mut text = [0u8; 4];
    let text = chr.encode_utf8(&mut text);
    PATTERN.with(|pattern| {
        let Some(found) = pattern.exec(text) else {
            // Every code point has exactly one category, so one group matches; never reached.
            return Unassigned;
        };
        CATEGORIES
            .iter()
            .enumerate()
            .find(|(index, _)| found.get(*index as u32 + 1).is_some())
            .map_or(Unassigned, |(_, (category, _))| *category)
    })
}
