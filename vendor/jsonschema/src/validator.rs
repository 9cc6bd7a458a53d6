//! Building a JSON Schema validator.
//! The main idea is to create a tree from the input JSON Schema. This tree will contain
//! everything needed to perform such validation in runtime.
use std::{collections::hash_map::Entry, mem::ManuallyDrop, sync::Arc};

use crate::{
    error::ErrorIterator,
    evaluation::{
        Annotations, ChildList, ErrorDescription, Evaluation, EvaluationArena, EvaluationNode,
        InstancePosition,
    },
    node::SchemaNode,
    paths::{LazyLocation, Location, RefTracker},
    regex::{RegexEngine, RegexError},
    unfinished_matches::{self, assume_each_outcome, MatchAssumptions, MatchSite},
    Draft, Json, Node, NodeIdentity, SerdeJson, ValidationError, ValidationOptions,
};
use ahash::AHashMap;
use referencing::Uri;
use serde_json::Value;

// Re-export LazyEvaluationPath from paths module
pub(crate) use crate::paths::LazyEvaluationPath;

#[derive(Default)]
struct EvaluationPathCache {
    prefix_identifiers: AHashMap<(usize, usize), usize>,
    paths: AHashMap<(usize, usize), Location>,
}

impl EvaluationPathCache {
    fn evaluation_path(&mut self, tracker: &RefTracker<'_>, location: &Location) -> Location {
        let prefix_identifier = self.prefix_identifier(tracker);
        let key = (prefix_identifier, location.as_ptr());
        match self.paths.entry(key) {
            Entry::Occupied(entry) => entry.get().clone(),
            Entry::Vacant(entry) => {
                let path = tracker.evaluation_path_with_prefix(tracker.prefix(), location);
                entry.insert(path.clone());
                path
            }
        }
    }

    fn prefix_identifier(&mut self, tracker: &RefTracker<'_>) -> usize {
        if let Some(identifier) = tracker.cached_prefix_identifier() {
            return identifier;
        }
        let parent_identifier = tracker
            .parent()
            .map_or(0, |parent| self.prefix_identifier(parent));
        let key = (parent_identifier, tracker.suffix().as_ptr());
        let next_identifier = self.prefix_identifiers.len() + 1;
        let identifier = match self.prefix_identifiers.entry(key) {
            Entry::Occupied(entry) => *entry.get(),
            Entry::Vacant(entry) => {
                entry.insert(next_identifier);
                next_identifier
            }
        };
        tracker.cache_prefix_identifier(identifier);
        identifier
    }
}

/// Validation state for cycle detection and memoization.
#[derive(Default)]
pub struct ValidationContext {
    validating: Vec<(usize, NodeIdentity)>,
    /// Stack of (validators, instance) pairs currently collecting evaluated properties/items,
    /// used to break cycles from self-referential `$dynamicRef`/`$recursiveRef` under
    /// `unevaluatedProperties`/`unevaluatedItems`.
    marking: Vec<(usize, NodeIdentity)>,
    /// Lazy-initialized cache for recursive schema validation; kept out of `lazy` because every
    /// `$ref` visit reads it.
    is_valid_cache: Option<AHashMap<(usize, NodeIdentity), bool>>,
    /// Visits to `$ref` targets so far; a visit's share of it decides whether its result is cached.
    ref_visits: u32,
    evaluation_path_calls: u32,
    /// Instance location of the node being evaluated; only the `evaluate` path sets it.
    instance_location: Option<InstancePosition>,
    /// State most `is_valid` and `validate` calls never create, behind one pointer: each call
    /// creates and drops a context, and dropping an empty one is a single check.
    lazy: Lazy,
    /// Outcomes this run assumes for regex matches the engine could not finish; boxed and only
    /// created once one is met, so validation without them carries a single null pointer.
    matches: Option<Box<MatchAssumptions>>,
}

#[cfg(all(target_arch = "x86_64", target_pointer_width = "64"))]
const _: () = assert!(std::mem::size_of::<ValidationContext>() == 144);

/// Checks for the state inline when dropped: the drop glue of a plain `Option<Box<_>>` is an
/// out-of-line call even when there is nothing to free.
#[derive(Default)]
struct Lazy(ManuallyDrop<Option<Box<LazyState>>>);

impl Drop for Lazy {
    #[inline]
    fn drop(&mut self) {
        if let Some(state) = self.0.take() {
            release(state);
        }
    }
}

#[cold]
fn release(state: Box<LazyState>) {
    drop(state);
}

#[derive(Default)]
struct LazyState {
    /// Cache for ECMA regex transformation results during format "regex" validation.
    ecma_regex_cache: Option<AHashMap<String, bool>>,
    evaluation_path_cache: Option<EvaluationPathCache>,
    /// Holds every node of the tree the `evaluate` path builds.
    arena: EvaluationArena,
    /// Cycle-guard entries per instance, for representations whose nodes can repeat on their own
    /// path: from when the guard outgrows `SCANNED_GUARD_ENTRIES` until it shrinks to
    /// `COUNTED_GUARD_FLOOR`.
    guarded_instances: Option<AHashMap<NodeIdentity, u32>>,
}

/// Runs `run` in a fresh context that assumes the outcomes in `matches`.
#[inline]
fn in_context<T>(
    matches: &mut Option<Box<MatchAssumptions>>,
    run: impl FnOnce(&mut ValidationContext) -> T,
) -> T {
    let mut ctx = ValidationContext {
        matches: matches.take(),
        ..ValidationContext::default()
    };
    let result = run(&mut ctx);
    *matches = ctx.matches.take();
    result
}

/// A `$ref` target's result is only cached when validating it visited this many targets.
///
/// Cheaper results cost less to recompute than to store, and a subtree that is validated again and
/// again reaches the threshold within a few levels, so repeated work stays bounded.
const MEMO_MIN_VISITS: u32 = 16;

/// Evaluation paths are only cached once this many have been built.
///
/// Small evaluations show little path reuse, so below this threshold the map costs more than it saves.
const EVALUATION_PATH_CACHE_THRESHOLD: u32 = 4096;

/// Cycle-guard entries scanned before per-instance counts replace the scan, where nodes can repeat
/// on their own path.
///
/// On Python instances the counts cost more than the scan up to 64 entries and less from 128.
const SCANNED_GUARD_ENTRIES: usize = 64;

/// Counts outlive the scan until the guard shrinks to this many entries, so each rebuild is paid
/// for by the entries pushed since the previous one.
const COUNTED_GUARD_FLOOR: usize = SCANNED_GUARD_ENTRIES / 2;

impl ValidationContext {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The outcomes this run assumed, taken out. client-tools patch (vendor/README.md): on wasm
    /// every engine is `RegExp`, whose matches always finish (their error types are uninhabited),
    /// so a run never assumes any, and saying so lets the compiler drop the code for them.
    #[inline]
    fn take_matches(&mut self) -> Option<Box<MatchAssumptions>> {
        if cfg!(target_arch = "wasm32") {
            None
        } else {
            self.matches.take()
        }
    }

    /// Whether `regex` matches `subject`; `site` reports a match the engine cannot finish.
    #[inline]
    pub(crate) fn is_match<R: RegexEngine>(
        &mut self,
        regex: &R,
        subject: &str,
        site: impl FnOnce() -> MatchSite,
    ) -> bool {
        if !cfg!(target_arch = "wasm32") && self.matches.is_some() {
            return self.is_match_under_assumptions(regex, subject, site);
        }
        match regex.is_match(subject) {
            Ok(matches) => matches,
            Err(error) => self.unfinished_match(subject, error, site),
        }
    }

    /// [`Self::is_match`] once a run met an unfinished match: a match a run could not finish
    /// skips the engine, which would only fail again.
    #[cold]
    fn is_match_under_assumptions<R: RegexEngine>(
        &mut self,
        regex: &R,
        subject: &str,
        site: impl FnOnce() -> MatchSite,
    ) -> bool {
        let matches = self
            .matches
            .as_mut()
            .expect("the caller checked for assumptions");
        if let Some(pattern) = regex
            .pattern()
            .filter(|pattern| matches.is_unfinished(pattern, subject))
        {
            return matches.resolve_unfinished(pattern, subject, site);
        }
        match regex.is_match(subject) {
            Ok(matches) => matches,
            Err(error) => matches.resolve(subject, error, site),
        }
    }

    #[cold]
    fn unfinished_match(
        &mut self,
        subject: &str,
        error: impl RegexError,
        site: impl FnOnce() -> MatchSite,
    ) -> bool {
        self.matches
            .get_or_insert_with(Box::default)
            .resolve(subject, error, site)
    }

    #[inline]
    fn lazy(&mut self) -> &mut LazyState {
        if self.lazy.0.is_none() {
            self.create_lazy();
        }
        self.lazy.0.as_mut().expect("created above")
    }

    #[cold]
    #[inline(never)]
    fn create_lazy(&mut self) {
        *self.lazy.0 = Some(Box::default());
    }

    /// Holds every node of the tree the `evaluate` path builds.
    #[inline]
    pub(crate) fn arena(&mut self) -> &mut EvaluationArena {
        &mut self.lazy().arena
    }

    #[inline]
    pub(crate) fn enter_instance_location(
        &mut self,
        position: InstancePosition,
    ) -> Option<InstancePosition> {
        self.instance_location.replace(position)
    }

    #[inline]
    pub(crate) fn leave_instance_location(&mut self, previous: Option<InstancePosition>) {
        self.instance_location = previous;
    }

    /// The position of `location`, rendered now since its parent position is not known.
    pub(crate) fn instance_position(&mut self, location: &LazyLocation) -> InstancePosition {
        if location.parent().is_none() {
            return InstancePosition::ROOT;
        }
        self.arena().rendered_position(location.into())
    }

    /// The position one segment below the one being evaluated, rendered only when read.
    pub(crate) fn instance_position_below(&mut self, location: &LazyLocation) -> InstancePosition {
        match self.instance_location {
            Some(parent) => self.arena().position_below(parent, location.segment()),
            None => self.instance_position(location),
        }
    }

    /// Returns `true` if cycle detected. `None` identity disables cycle tracking for this node.
    #[inline]
    pub(crate) fn enter<F: Json>(
        &mut self,
        node_id: usize,
        instance_identity: Option<NodeIdentity>,
    ) -> bool {
        let Some(identity) = instance_identity else {
            return false;
        };
        let key = (node_id, identity);
        if F::ACYCLIC {
            if self.topmost_entries(key).is_none() {
                return true;
            }
            self.validating.push(key);
            return false;
        }
        if self.validating.len() > SCANNED_GUARD_ENTRIES
            || (self.validating.len() > COUNTED_GUARD_FLOOR && self.has_guard_counts())
        {
            return self.enter_counted(key);
        }
        if self.validating.contains(&key) {
            return true;
        }
        self.validating.push(key);
        if self.validating.len() > SCANNED_GUARD_ENTRIES {
            self.count_guarded_instances();
        }
        false
    }

    /// How many entries on top of the guard hold `key`'s instance, or `None` if one of them is
    /// `key` itself.
    ///
    /// Validation only descends, so the entries for an instance being validated are the topmost.
    #[inline]
    fn topmost_entries(&self, key: (usize, NodeIdentity)) -> Option<u32> {
        let mut topmost = 0;
        for &entered in self.validating.iter().rev() {
            if entered.1 != key.1 {
                break;
            }
            if entered == key {
                return None;
            }
            topmost += 1;
        }
        Some(topmost)
    }

    #[inline]
    fn has_guard_counts(&self) -> bool {
        self.lazy
            .0
            .as_ref()
            .is_some_and(|state| state.guarded_instances.is_some())
    }

    fn guarded_instances(&mut self) -> &mut AHashMap<NodeIdentity, u32> {
        self.lazy()
            .guarded_instances
            .as_mut()
            .expect("counted past the scan")
    }

    /// [`Self::enter`] once the guard is counted, where nodes can repeat on their own path.
    #[cold]
    #[inline(never)]
    fn enter_counted(&mut self, key: (usize, NodeIdentity)) -> bool {
        let Some(topmost) = self.topmost_entries(key) else {
            return true;
        };
        // The instance can also sit deeper on its own path, as in a self-referencing list.
        let deeper = self
            .guarded_instances()
            .get(&key.1)
            .is_some_and(|&count| count > topmost);
        if deeper && self.validating.contains(&key) {
            return true;
        }
        *self.guarded_instances().entry(key.1).or_insert(0) += 1;
        self.validating.push(key);
        false
    }

    #[cold]
    #[inline(never)]
    fn count_guarded_instances(&mut self) {
        let mut counts = AHashMap::with_capacity(self.validating.len());
        for &(_, identity) in &self.validating {
            *counts.entry(identity).or_insert(0) += 1;
        }
        self.lazy().guarded_instances = Some(counts);
    }

    #[inline]
    pub(crate) fn exit<F: Json>(
        &mut self,
        node_id: usize,
        instance_identity: Option<NodeIdentity>,
    ) {
        let Some(identity) = instance_identity else {
            return;
        };
        let popped = self.validating.pop();
        debug_assert_eq!(
            popped,
            Some((node_id, identity)),
            "ValidationContext::exit called out of order"
        );
        if !F::ACYCLIC && self.validating.len() >= COUNTED_GUARD_FLOOR && self.has_guard_counts() {
            self.exit_counted(identity);
        }
    }

    #[cold]
    #[inline(never)]
    fn exit_counted(&mut self, identity: NodeIdentity) {
        if self.validating.len() == COUNTED_GUARD_FLOOR {
            self.lazy().guarded_instances = None;
        } else if let Entry::Occupied(mut count) = self.guarded_instances().entry(identity) {
            if *count.get() == 1 {
                count.remove();
            } else {
                *count.get_mut() -= 1;
            }
        }
    }

    /// Returns `true` if this `(validators, instance)` pair is already being marked (cycle).
    #[inline]
    pub(crate) fn enter_marking(
        &mut self,
        validators_id: usize,
        instance_identity: Option<NodeIdentity>,
    ) -> bool {
        let Some(identity) = instance_identity else {
            return false;
        };
        let key = (validators_id, identity);
        if self.marking.contains(&key) {
            return true;
        }
        self.marking.push(key);
        false
    }

    #[inline]
    pub(crate) fn exit_marking(&mut self) {
        self.marking.pop();
    }

    /// Containers only: the cache outlives them, and only they promise an identity no later node
    /// reuses.
    #[inline]
    pub(crate) fn get_cached_result(
        &self,
        node_id: usize,
        identity: Option<NodeIdentity>,
    ) -> Option<bool> {
        let cache = self.is_valid_cache.as_ref()?;
        cache.get(&(node_id, identity?)).copied()
    }

    /// Counts a visit to a `$ref` target; the returned mark goes to `cache_result`.
    #[inline]
    pub(crate) fn start_ref_visit(&mut self) -> u32 {
        let mark = self.ref_visits;
        self.ref_visits = mark.wrapping_add(1);
        mark
    }

    /// Containers only: the cache outlives them, and only they promise an identity no later node
    /// reuses.
    #[inline]
    pub(crate) fn cache_result(
        &mut self,
        node_id: usize,
        identity: Option<NodeIdentity>,
        result: bool,
        visit: u32,
    ) {
        let Some(identity) = identity else {
            return;
        };
        if self.ref_visits.wrapping_sub(visit) < MEMO_MIN_VISITS {
            return;
        }
        self.is_valid_cache
            .get_or_insert_with(AHashMap::new)
            .insert((node_id, identity), result);
    }
    /// Evaluation path for `location` under `tracker`, cached across instance nodes.
    ///
    /// Keying on addresses is sound because none of them can be freed and reused mid-run:
    /// keyword locations and `$ref` suffixes live in the compiled schema, and cached prefixes
    /// are owned by `eval_prefix_cache`.
    pub(crate) fn evaluation_path(
        &mut self,
        tracker: &RefTracker<'_>,
        location: &Location,
    ) -> Location {
        self.evaluation_path_calls = self.evaluation_path_calls.saturating_add(1);
        if self.evaluation_path_calls < EVALUATION_PATH_CACHE_THRESHOLD {
            return tracker.evaluation_path_with_prefix(tracker.prefix(), location);
        }
        self.lazy()
            .evaluation_path_cache
            .get_or_insert_with(EvaluationPathCache::default)
            .evaluation_path(tracker, location)
    }

    /// Check if an ECMA regex pattern is valid.
    pub(crate) fn is_valid_ecma_regex(&mut self, pattern: &str) -> bool {
        if let Some(cache) = self
            .lazy
            .0
            .as_ref()
            .and_then(|lazy| lazy.ecma_regex_cache.as_ref())
        {
            if let Some(&result) = cache.get(pattern) {
                return result;
            }
        }
        let result = jsonschema_regex::is_valid_ecma_regex(pattern);
        self.lazy()
            .ecma_regex_cache
            .get_or_insert_with(AHashMap::new)
            .insert(pattern.to_owned(), result);
        result
    }
}

/// The Validate trait represents a predicate over some JSON value. Some validators are very simple
/// predicates such as "a value which is a string", whereas others may be much more complex,
/// consisting of several other validators composed together in various ways.
///
/// Much of the time all an application cares about is whether the predicate returns true or false,
/// in that case the `is_valid` function is sufficient. Sometimes applications will want more
/// detail about why a schema has failed, in which case the `validate` method can be used to
/// iterate over the errors produced by this validator. Finally, applications may be interested in
/// annotations produced by schemas over valid results, in this case the `evaluate` method can be used
/// to obtain this information.
///
/// If you are implementing `Validate` it is often sufficient to implement `validate` and
/// `is_valid`. `evaluate` is only necessary for validators which compose other validators. See the
/// documentation for `evaluate` for more information.
///
/// # Context Types
///
/// - `is_valid` takes `LightweightContext`: Only cycle detection, zero path tracking overhead.
/// - `validate`, `collect_errors`, `evaluate` take `ValidationContext`: Cycle detection + evaluation path tracking.
pub(crate) trait Validate<F: Json = SerdeJson>: Send + Sync {
    fn collect_errors<'i>(
        &self,
        instance: &F::Node<'i>,
        location: &LazyLocation,
        tracker: Option<&RefTracker>,
        ctx: &mut ValidationContext,
        errors: &mut Vec<ValidationError<'i>>,
    ) {
        if let Err(error) = self.validate(instance, location, tracker, ctx) {
            errors.push(error);
        }
    }

    fn is_valid(&self, instance: &F::Node<'_>, ctx: &mut ValidationContext) -> bool;

    fn validate<'i>(
        &self,
        instance: &F::Node<'i>,
        location: &LazyLocation,
        tracker: Option<&RefTracker>,
        ctx: &mut ValidationContext,
    ) -> Result<(), ValidationError<'i>>;

    /// `evaluate`, where the caller has already rendered this instance position.
    ///
    /// Rendering a JSON Pointer walks the whole location chain, and every schema node at one
    /// instance position renders the same one. Implementors that stay at that position should
    /// forward `instance_location` instead of rebuilding it.
    #[cfg(not(target_arch = "wasm32"))] // client-tools patch: `evaluate` is never called on wasm32
    fn evaluate_with_location(
        &self,
        instance: &F::Node<'_>,
        location: &LazyLocation,
        instance_location: InstancePosition,
        tracker: Option<&RefTracker>,
        ctx: &mut ValidationContext,
    ) -> EvaluationResult {
        let _ = instance_location;
        self.evaluate(instance, location, tracker, ctx)
    }

    #[cfg(not(target_arch = "wasm32"))] // client-tools patch: `evaluate` is never called on wasm32
    fn evaluate(
        &self,
        instance: &F::Node<'_>,
        _location: &LazyLocation,
        _tracker: Option<&RefTracker>,
        ctx: &mut ValidationContext,
    ) -> EvaluationResult {
        let mut collected = Vec::new();
        // An `ErrorDescription` keeps only the keyword and the message, which depend on the error
        // kind and the instance alone, so collecting at the root renders no paths.
        self.collect_errors(instance, &LazyLocation::new(), None, ctx, &mut collected);
        let errors: Vec<ErrorDescription> = collected
            .iter()
            .map(ErrorDescription::from_validation_error)
            .collect();
        if errors.is_empty() {
            EvaluationResult::valid_empty()
        } else {
            EvaluationResult::invalid_empty(errors)
        }
    }

    /// Returns the canonical location for this validator's schemaLocation output.
    ///
    /// Per JSON Schema spec, schemaLocation "MUST NOT include by-reference applicators
    /// such as `$ref` or `$dynamicRef`". For most validators, the keyword location is the
    /// canonical location, so this returns `None` by default.
    ///
    /// `RefValidator` and similar by-reference validators override this to return
    /// the target schema's location within its resource (e.g., `/$defs/item` instead of
    /// `/properties/foo/$ref`), together with its absolute URI when the resource has one.
    fn canonical_location(&self) -> Option<(&Location, Option<&Arc<Uri<String>>>)> {
        None
    }

    /// Whether `is_valid` answers for this keyword alone. `false` when it lets through instances a
    /// sibling keyword always rejects, so it cannot stand in for `validate`.
    fn is_valid_alone(&self) -> bool {
        true
    }

    /// The types this validator accepts when all it checks is `type`.
    fn accepted_types(&self) -> Option<crate::types::JsonTypeSet> {
        None
    }

    /// The compiled target when this validator is a `$ref` that owns it.
    fn owned_ref_target(&self) -> Option<&crate::node::SchemaNode<F>> {
        None
    }

    /// This validator as a compiled node, for `owned_ref_target`.
    fn as_owned_node(&self) -> Option<&crate::node::SchemaNode<F>> {
        None
    }

    /// Adds what this validator checks to `part` when it checks nothing but an object's members,
    /// so `allOf` can check such branches in one pass over the object.
    fn collect_object_part<'a>(
        &'a self,
        part: &mut crate::keywords::all_of::ObjectPart<'a, F>,
    ) -> bool {
        let _ = part;
        false
    }
}

/// `evaluate` for a keyword that asserts on the instance alone and annotates nothing: a valid
/// instance skips building errors.
pub(crate) fn evaluate_assertion<F: Json, V: Validate<F>>(
    validator: &V,
    instance: &F::Node<'_>,
    ctx: &mut ValidationContext,
) -> EvaluationResult {
    if validator.is_valid(instance, ctx) {
        return EvaluationResult::valid_empty();
    }
    // The description depends on the error kind and the instance alone; see `Validate::evaluate`.
    match validator.validate(instance, &LazyLocation::new(), None, ctx) {
        Ok(()) => EvaluationResult::valid_empty(),
        Err(error) => {
            EvaluationResult::invalid_empty(vec![ErrorDescription::from_validation_error(&error)])
        }
    }
}

/// The result of evaluating a validator against an instance. This is a "partial" result because it does not include information about
/// where the error or annotation occurred.
#[derive(PartialEq)]
pub(crate) enum EvaluationResult {
    Valid {
        /// Annotations produced by this validator
        annotations: Option<Annotations>,
        /// Children evaluation nodes
        children: ChildList,
    },
    Invalid {
        /// Errors which caused this schema to be invalid
        errors: Vec<ErrorDescription>,
        /// Children evaluation nodes
        children: ChildList,
        /// Potential annotations that should be reported as dropped on failure
        annotations: Option<Annotations>,
    },
}

impl EvaluationResult {
    /// Create an empty `EvaluationResult` which is valid
    pub(crate) fn valid_empty() -> EvaluationResult {
        EvaluationResult::Valid {
            annotations: None,
            children: ChildList::default(),
        }
    }

    /// Create an empty `EvaluationResult` which is invalid
    pub(crate) fn invalid_empty(errors: Vec<ErrorDescription>) -> EvaluationResult {
        EvaluationResult::Invalid {
            errors,
            children: ChildList::default(),
            annotations: None,
        }
    }

    /// Set the annotation that will be returned for the current validator. If this
    /// `EvaluationResult` is invalid then this method does nothing
    pub(crate) fn annotate(&mut self, new_annotations: Annotations) {
        match self {
            Self::Valid { annotations, .. } | Self::Invalid { annotations, .. } => {
                *annotations = Some(new_annotations);
            }
        }
    }

    /// Set the error that will be returned for the current validator. If this
    /// `EvaluationResult` is valid then this method converts this application into
    /// `EvaluationResult::Invalid`
    pub(crate) fn mark_errored(&mut self, error: ErrorDescription) {
        match self {
            Self::Invalid { errors, .. } => errors.push(error),
            Self::Valid {
                annotations,
                children,
            } => {
                *self = Self::Invalid {
                    errors: vec![error],
                    children: std::mem::take(children),
                    annotations: annotations.take(),
                }
            }
        }
    }

    pub(crate) fn from_children(children: ChildList) -> EvaluationResult {
        if children.all_valid() {
            EvaluationResult::Valid {
                annotations: None,
                children,
            }
        } else {
            EvaluationResult::Invalid {
                errors: Vec::new(),
                children,
                annotations: None,
            }
        }
    }
}

impl EvaluationResult {
    pub(crate) fn from_node(arena: &mut EvaluationArena, node: EvaluationNode) -> Self {
        let valid = node.valid;
        let children = ChildList::of(arena, node);
        if valid {
            EvaluationResult::Valid {
                annotations: None,
                children,
            }
        } else {
            EvaluationResult::Invalid {
                errors: Vec::new(),
                children,
                annotations: None,
            }
        }
    }
}

/// A compiled JSON Schema validator.
///
/// This structure represents a JSON Schema that has been parsed and compiled into
/// an efficient internal representation for validation. It contains the root node
/// of the schema tree and the configuration options used during compilation.
pub struct Validator<F: Json = SerdeJson> {
    pub(crate) root: SchemaNode<F>,
    /// `$ref` targets compiled off the call stack. Owning them here drops a long `$ref` chain
    /// one target at a time; `root` drops first, so each target is released from this list.
    pub(crate) targets: Vec<SchemaNode<F>>,
    pub(crate) draft: Draft,
}

impl<F: Json> Clone for Validator<F> {
    fn clone(&self) -> Self {
        Self {
            root: self.root.clone(),
            targets: self.targets.clone(),
            draft: self.draft,
        }
    }
}

impl<F: Json> std::fmt::Debug for Validator<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("root", &self.root)
            .field("draft", &self.draft)
            .finish_non_exhaustive()
    }
}

impl Validator<SerdeJson> {
    /// Create a default [`ValidationOptions`] for configuring JSON Schema validation.
    ///
    /// Use this to set the draft version and other validation parameters.
    ///
    /// # Example
    ///
    /// ```rust
    /// # use jsonschema::Draft;
    /// # let schema = serde_json::json!({});
    /// let validator = jsonschema::options()
    ///     .with_draft(Draft::Draft7)
    ///     .build(&schema);
    /// ```
    #[must_use]
    pub fn options<'i>() -> ValidationOptions<'i> {
        ValidationOptions::default()
    }
    /// Create a default [`ValidationOptions`] configured for async validation.
    ///
    /// Use this to set the draft version and other validation parameters when working
    /// with schemas that require async reference resolution.
    ///
    /// # Example
    ///
    /// ```rust
    /// # use serde_json::json;
    /// # use jsonschema::Draft;
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let schema = json!({
    ///     "$ref": "https://example.com/schema.json"
    /// });
    ///
    /// let validator = jsonschema::async_options()
    ///     .with_draft(Draft::Draft202012)
    ///     .build(&schema)
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// For sync validation, use [`options()`](crate::options()) instead.
    #[cfg(feature = "resolve-async")]
    #[must_use]
    pub fn async_options<'i>(
    ) -> ValidationOptions<'i, std::sync::Arc<dyn referencing::AsyncRetrieve>> {
        ValidationOptions::default()
    }
    /// Create a validator using the default options.
    ///
    /// # Errors
    ///
    /// Returns an error if the supplied `schema` is invalid for the selected draft or references cannot be resolved.
    pub fn new(schema: &Value) -> Result<Validator, ValidationError<'static>> {
        Self::options().build(schema)
    }
    /// Create a validator using the default async options.
    #[cfg(feature = "resolve-async")]
    ///
    /// # Errors
    ///
    /// Returns an error if the supplied `schema` is invalid for the selected draft or references cannot be resolved.
    pub async fn async_new(schema: &Value) -> Result<Validator, ValidationError<'static>> {
        Self::async_options().build(schema).await
    }
}

// `F::Node` is a borrow handle (`&Value` for `serde_json`); taking it by value keeps the serde
// call ergonomics (`&Value`, not `&&Value`) across every representation.
#[allow(clippy::needless_pass_by_value)]
impl<F: Json> Validator<F> {
    /// Validate `instance` against `schema` and return the first error if any.
    ///
    /// # Errors
    ///
    /// Returns the first [`ValidationError`] describing why `instance` does not satisfy the schema.
    #[inline]
    pub fn validate<'i>(&self, instance: F::Node<'i>) -> Result<(), ValidationError<'i>> {
        let mut ctx = ValidationContext::new();
        let result = self
            .root
            .validate(&instance, &LazyLocation::new(), None, &mut ctx);
        match ctx.take_matches() {
            None => result,
            Some(first) => self
                .errors_under_every_outcome(&instance, *first)
                .into_iter()
                .next()
                .map_or(Ok(()), Err),
        }
    }
    /// Run validation against `instance` and return an iterator over [`ValidationError`] in the error case.
    #[inline]
    #[must_use]
    pub fn iter_errors<'i>(&'i self, instance: F::Node<'i>) -> ErrorIterator<'i> {
        let mut ctx = ValidationContext::new();
        let mut errors = Vec::new();
        self.root
            .collect_errors(&instance, &LazyLocation::new(), None, &mut ctx, &mut errors);
        if let Some(first) = ctx.take_matches() {
            errors = self.errors_under_every_outcome(&instance, *first);
        }
        ErrorIterator::from_iterator(errors.into_iter())
    }
    /// Run validation against `instance` but return a boolean result instead of an iterator.
    /// It is useful for cases, where it is important to only know the fact if the data is valid or not.
    /// This approach is much faster, than [`Validator::validate`].
    #[must_use]
    #[inline]
    pub fn is_valid(&self, instance: F::Node<'_>) -> bool {
        let mut ctx = ValidationContext::new();
        let valid = self.root.is_valid(&instance, &mut ctx);
        match ctx.take_matches() {
            None => valid,
            Some(first) => self.valid_under_every_outcome(&instance, *first),
        }
    }

    #[cold]
    fn valid_under_every_outcome(&self, instance: &F::Node<'_>, first: MatchAssumptions) -> bool {
        unfinished_matches::validity(assume_each_outcome(
            |matches| in_context(matches, |ctx| self.root.is_valid(instance, ctx)),
            first,
        ))
    }

    #[cold]
    fn errors_under_every_outcome<'i>(
        &self,
        instance: &F::Node<'i>,
        first: MatchAssumptions,
    ) -> Vec<ValidationError<'i>> {
        let outcomes = assume_each_outcome(
            |matches| {
                in_context(matches, |ctx| {
                    let mut errors = Vec::new();
                    self.root.collect_errors(
                        instance,
                        &LazyLocation::new(),
                        None,
                        ctx,
                        &mut errors,
                    );
                    errors
                })
            },
            first,
        );
        unfinished_matches::errors(outcomes, || instance.lazy_value())
    }
    /// Evaluate the schema and expose structured output formats.
    #[must_use]
    #[inline]
    #[cfg(not(target_arch = "wasm32"))] // client-tools patch: `evaluate` is never called on wasm32
    pub fn evaluate(&self, instance: F::Node<'_>) -> Evaluation {
        let mut ctx = ValidationContext::new();
        let root = self
            .root
            .evaluate_instance(&instance, &LazyLocation::new(), None, &mut ctx);
        match ctx.take_matches() {
            None => {
                let arena = ctx.arena();
                let root = arena.push(root);
                Evaluation::new(std::mem::take(arena), root)
            }
            // What the instance evaluates to depends on the unfinished matches; only the errors
            // shared by every outcome are known.
            Some(first) => {
                Self::evaluation_from_errors(self.errors_under_every_outcome(&instance, *first))
            }
        }
    }

    /// A root with one child per error and no annotations.
    #[cold]
    fn evaluation_from_errors(errors: Vec<ValidationError<'_>>) -> Evaluation {
        let root_location = crate::evaluation::format_keyword_location(&Location::new(), None);
        let mut arena = EvaluationArena::default();
        let root = arena.rendered_position(Location::new());
        if errors.is_empty() {
            return Evaluation::with_root(
                arena,
                EvaluationNode::valid(
                    Location::new(),
                    None,
                    root_location,
                    root,
                    None,
                    ChildList::default(),
                ),
            );
        }
        let mut children = ChildList::default();
        for error in &errors {
            let position = arena.rendered_position(error.instance_path().clone());
            children.push(
                &mut arena,
                EvaluationNode::invalid(
                    error.evaluation_path().clone(),
                    None,
                    crate::evaluation::format_keyword_location(error.schema_path(), None),
                    position,
                    None,
                    vec![ErrorDescription::from_validation_error(error)],
                    ChildList::default(),
                ),
            );
        }
        Evaluation::with_root(
            arena,
            EvaluationNode::invalid(
                Location::new(),
                None,
                root_location,
                root,
                None,
                Vec::new(),
                children,
            ),
        )
    }
    /// The [`Draft`] this validator applies: the one set via `with_draft`, else the one `$schema`
    /// declares, else the default.
    #[must_use]
    pub fn draft(&self) -> Draft {
        self.draft
    }
}

/// A map of compiled JSON Schema validators keyed by URI-fragment JSON pointers.
///
/// Built via [`ValidationOptions::build_map`] or the [`validator_map_for`](crate::validator_map_for)
/// convenience function.
///
/// Each key is a URI-fragment JSON pointer (e.g. `"#"`, `"#/$defs/User"`).
/// The root schema is always present under the key `"#"`.
pub struct ValidatorMap<F: Json = SerdeJson> {
    pub(crate) validators: AHashMap<String, Validator<F>>,
}

impl<F: Json> std::fmt::Debug for ValidatorMap<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidatorMap")
            .field("validators", &self.validators)
            .finish()
    }
}

impl<F: Json> ValidatorMap<F> {
    /// Returns the validator for the given URI-fragment pointer, or `None` if not found.
    #[must_use]
    pub fn get(&self, pointer: &str) -> Option<&Validator<F>> {
        self.validators.get(pointer)
    }

    /// Returns `true` if the map contains a validator for the given pointer.
    #[must_use]
    pub fn contains_key(&self, pointer: &str) -> bool {
        self.validators.contains_key(pointer)
    }

    /// Returns an iterator over all URI-fragment pointers in the map.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.validators.keys().map(String::as_str)
    }

    /// Returns the number of compiled subschema validators in the map.
    #[must_use]
    pub fn len(&self) -> usize {
        self.validators.len()
    }

    /// Returns `true` if the map contains no validators.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.validators.is_empty()
    }
}

impl<F: Json> std::ops::Index<&str> for ValidatorMap<F> {
    type Output = Validator<F>;

    /// # Panics
    ///
    /// Panics if the pointer is not found in the map.
    fn index(&self, pointer: &str) -> &Validator<F> {
        self.validators
            .get(pointer)
            .unwrap_or_else(|| panic!("JSON pointer '{pointer}' not found in ValidatorMap"))
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        error::ValidationError, keywords::custom::Keyword, paths::Location, Draft, Validator,
        ValidatorMap,
    };
    use fancy_regex::Regex;
    use num_cmp::NumCmp;
    use serde_json::{json, Map, Value};
    use std::sync::LazyLock;
    use test_case::test_case;

    #[cfg(not(target_arch = "wasm32"))]
    fn load(path: &str, idx: usize) -> Value {
        use std::{fs::File, io::Read, path::Path};
        let path = Path::new(path);
        let mut file = File::open(path).unwrap();
        let mut content = String::new();
        file.read_to_string(&mut content).ok().unwrap();
        let data: Value = serde_json::from_str(&content).unwrap();
        let case = &data.as_array().unwrap()[idx];
        case.get("schema").unwrap().clone()
    }

    /// Large enough that early paths are built directly and later ones come from the cache.
    #[test]
    fn evaluation_paths_match_across_cache_threshold() {
        const ELEMENTS: usize = 5000;

        let schema = json!({
            "type": "array",
            "items": {"$ref": "#/$defs/entry"},
            "$defs": {
                "entry": {
                    "type": "object",
                    "properties": {"value": {"$ref": "#/$defs/leaf"}}
                },
                "leaf": {"type": "integer"}
            }
        });
        let validator = crate::validator_for(&schema).expect("Valid schema");
        let instance = Value::Array((0..ELEMENTS).map(|_| json!({"value": "no"})).collect());

        let evaluation = validator.evaluate(&instance);
        let list = serde_json::to_value(evaluation.list()).expect("Serializable");
        let failures: Vec<_> = list["details"]
            .as_array()
            .expect("`details` is an array")
            .iter()
            .filter(|unit| unit.get("errors").is_some())
            .collect();

        assert_eq!(failures.len(), ELEMENTS);
        for (idx, unit) in failures.iter().enumerate() {
            assert_eq!(
                unit["evaluationPath"],
                "/items/$ref/properties/value/$ref/type"
            );
            assert_eq!(unit["instanceLocation"], format!("/{idx}/value"));
            assert_eq!(unit["schemaLocation"], "/$defs/leaf/type");
        }
    }

    #[test]
    fn debug_shows_root_and_draft() {
        let validator = crate::validator_for(&json!(true)).expect("Valid schema");
        assert_eq!(
            format!("{validator:?}"),
            r#"Validator { root: SchemaNode { inner: SchemaNodeInner { validators: Boolean, .. }, location: Location(""), .. }, draft: Draft202012, .. }"#
        );
    }

    fn schema_declaring(uri: Option<&str>) -> Value {
        match uri {
            Some(uri) => json!({"$schema": uri, "type": "string"}),
            None => json!({"type": "string"}),
        }
    }

    #[test_case(None, None, Draft::Draft202012; "no schema default")]
    #[test_case(Some("http://json-schema.org/draft-04/schema#"), None, Draft::Draft4; "draft 4")]
    #[test_case(Some("http://json-schema.org/draft-06/schema#"), None, Draft::Draft6; "draft 6")]
    #[test_case(Some("http://json-schema.org/draft-07/schema#"), None, Draft::Draft7; "draft 7")]
    #[test_case(Some("https://json-schema.org/draft/2019-09/schema"), None, Draft::Draft201909; "draft 2019-09")]
    #[test_case(Some("https://json-schema.org/draft/2020-12/schema"), None, Draft::Draft202012; "draft 2020-12")]
    #[test_case(Some("https://json-schema.org/schema"), None, Draft::Draft202012; "version-less")]
    #[test_case(None, Some(Draft::Draft4), Draft::Draft4; "no schema explicit draft 4")]
    #[test_case(Some("http://json-schema.org/draft-04/schema#"), Some(Draft::Draft4), Draft::Draft4; "explicit draft 4 matching")]
    #[test_case(Some("http://json-schema.org/draft-07/schema#"), Some(Draft::Draft4), Draft::Draft4; "explicit draft 4 over draft 7")]
    #[test_case(Some("http://json-schema.org/draft-04/schema#"), Some(Draft::Draft202012), Draft::Draft202012; "explicit draft 2020-12 over draft 4")]
    #[test_case(Some("https://json-schema.org/draft/2020-12/schema"), Some(Draft::Draft6), Draft::Draft6; "explicit draft 6 over draft 2020-12")]
    fn reports_draft_used_to_validate(uri: Option<&str>, explicit: Option<Draft>, expected: Draft) {
        let schema = schema_declaring(uri);
        let mut options = crate::options();
        if let Some(draft) = explicit {
            options = options.with_draft(draft);
        }
        let validator = options.build(&schema).expect("Valid schema");
        let map = options.build_map(&schema).expect("Valid schema");
        let root = map.get("#").expect("Root is present");
        assert_eq!([validator.draft(), root.draft()], [expected; 2]);
    }

    #[test]
    fn validator_for_reports_declared_draft() {
        let schema = schema_declaring(Some("http://json-schema.org/draft-04/schema#"));
        let validator = crate::validator_for(&schema).expect("Valid schema");
        assert_eq!(validator.draft(), Draft::Draft4);
    }

    #[test]
    fn draft_constructors_report_their_draft() {
        let schema = schema_declaring(Some("https://json-schema.org/draft/2020-12/schema"));
        let drafts = [
            crate::draft4::new(&schema).expect("Valid schema").draft(),
            crate::draft6::new(&schema).expect("Valid schema").draft(),
            crate::draft7::new(&schema).expect("Valid schema").draft(),
            crate::draft201909::new(&schema)
                .expect("Valid schema")
                .draft(),
            crate::draft202012::new(&schema)
                .expect("Valid schema")
                .draft(),
        ];
        assert_eq!(
            drafts,
            [
                Draft::Draft4,
                Draft::Draft6,
                Draft::Draft7,
                Draft::Draft201909,
                Draft::Draft202012
            ]
        );
    }

    #[test]
    fn meta_validators_report_their_draft() {
        let drafts = [
            crate::draft4::meta::validator().draft(),
            crate::draft6::meta::validator().draft(),
            crate::draft7::meta::validator().draft(),
            crate::draft201909::meta::validator().draft(),
            crate::draft202012::meta::validator().draft(),
        ];
        assert_eq!(
            drafts,
            [
                Draft::Draft4,
                Draft::Draft6,
                Draft::Draft7,
                Draft::Draft201909,
                Draft::Draft202012
            ]
        );
    }

    #[test]
    fn custom_meta_schema_reports_the_draft_it_builds_on() {
        let meta_schema = crate::Resource::from_contents(json!({
            "$id": "https://example.com/meta",
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object"
        }));
        let registry = crate::Registry::new()
            .add("https://example.com/meta", meta_schema)
            .expect("Valid resource")
            .prepare()
            .expect("Valid registry");
        let schema = schema_declaring(Some("https://example.com/meta"));
        let validator = crate::options()
            .with_registry(&registry)
            .build(&schema)
            .expect("Valid schema");
        assert_eq!(validator.draft(), Draft::Draft7);
    }

    #[test]
    fn unknown_meta_schema_is_rejected() {
        let schema = schema_declaring(Some("https://example.com/unknown"));
        assert!(crate::options().offline().build(&schema).is_err());
    }

    #[cfg(all(feature = "resolve-async", not(target_family = "wasm")))]
    #[tokio::test]
    async fn async_build_reports_declared_draft() {
        let schema = schema_declaring(Some("http://json-schema.org/draft-04/schema#"));
        let validator = crate::async_validator_for(&schema)
            .await
            .expect("Valid schema");
        assert_eq!(validator.draft(), Draft::Draft4);
    }

    #[test]
    fn only_keyword() {
        // When only one keyword is specified
        let schema = json!({"type": "string"});
        let validator = crate::validator_for(&schema).unwrap();
        let value1 = json!("AB");
        let value2 = json!(1);
        // And only this validator
        assert_eq!(validator.root.validators().len(), 1);
        assert!(validator.validate(&value1).is_ok());
        assert!(validator.validate(&value2).is_err());
    }

    #[test]
    #[cfg(not(target_arch = "wasm32"))]
    fn validate_ref() {
        let schema = load("tests/suite/tests/draft7/ref.json", 1);
        let value = json!({"bar": 3});
        let validator = crate::validator_for(&schema).unwrap();
        assert!(validator.validate(&value).is_ok());
        let value = json!({"bar": true});
        assert!(validator.validate(&value).is_err());
    }

    #[test]
    fn wrong_schema_type() {
        let schema = json!([1]);
        let validator = crate::validator_for(&schema);
        assert!(validator.is_err());
    }

    #[test]
    fn multiple_errors() {
        let schema = json!({"minProperties": 2, "propertyNames": {"minLength": 3}});
        let value = json!({"a": 3});
        let validator = crate::validator_for(&schema).unwrap();
        let errors: Vec<_> = validator.iter_errors(&value).collect();
        assert_eq!(errors.len(), 2);
        assert_eq!(
            errors[0].to_string(),
            r#"{"a":3} has less than 2 properties"#
        );
        assert_eq!(errors[1].to_string(), r#""a" is shorter than 3 characters"#);
    }

    #[test]
    fn custom_keyword_definition() {
        // Define a custom validator that verifies the object's keys consist of
        // only ASCII representable characters.
        // NOTE: This could be done with `propertyNames` + `pattern` but will be slower due to
        // regex usage.
        struct CustomObjectValidator;
        impl<'i> Keyword<'i> for CustomObjectValidator {
            fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
                for key in instance.as_object().unwrap().keys() {
                    if !key.is_ascii() {
                        return Err(ValidationError::custom("Key is not ASCII"));
                    }
                }
                Ok(())
            }

            fn is_valid(&self, instance: &'i Value) -> bool {
                for (key, _value) in instance.as_object().unwrap() {
                    if !key.is_ascii() {
                        return false;
                    }
                }
                true
            }
        }

        fn custom_object_type_factory<'a>(
            _: &'a Map<String, Value>,
            schema: &'a Value,
            _path: Location,
        ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
            const EXPECTED: &str = "ascii-keys";
            if schema.as_str() == Some(EXPECTED) {
                Ok(Box::new(CustomObjectValidator))
            } else {
                Err(ValidationError::schema(format!(
                    "Expected '{EXPECTED}', got {schema}"
                )))
            }
        }

        // Define a JSON schema that enforces the top level object has ASCII keys and has at least 1 property
        let schema =
            json!({ "custom-object-type": "ascii-keys", "type": "object", "minProperties": 1 });
        let validator = crate::options()
            .with_keyword("custom-object-type", custom_object_type_factory)
            .build(&schema)
            .unwrap();

        // Verify schema validation detects object with too few properties
        let instance = json!({});
        assert!(validator.validate(&instance).is_err());
        assert!(!validator.is_valid(&instance));

        // Verify validator succeeds on a valid custom-object-type
        let instance = json!({ "a" : 1 });
        assert!(validator.validate(&instance).is_ok());
        assert!(validator.is_valid(&instance));

        // Verify validator detects invalid custom-object-type
        let instance = json!({ "å" : 1 });
        let error = validator.validate(&instance).expect_err("Should fail");
        assert_eq!(error.to_string(), "Key is not ASCII");
        assert!(!validator.is_valid(&instance));
    }

    #[test]
    fn custom_keyword_iter_errors() {
        // A custom keyword that reports every non-ASCII key at once via `iter_errors`.
        struct NonAsciiKeys;
        impl<'i> Keyword<'i> for NonAsciiKeys {
            fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
                self.iter_errors(instance).next().map_or(Ok(()), Err)
            }

            fn is_valid(&self, instance: &'i Value) -> bool {
                instance
                    .as_object()
                    .is_none_or(|obj| obj.keys().all(|key| key.is_ascii()))
            }

            fn iter_errors(
                &self,
                instance: &'i Value,
            ) -> Box<dyn Iterator<Item = ValidationError<'i>> + 'i> {
                let errors: Vec<_> = instance
                    .as_object()
                    .into_iter()
                    .flat_map(|obj| obj.keys())
                    .filter(|key| !key.is_ascii())
                    .map(|key| ValidationError::custom(format!("Key {key:?} is not ASCII")))
                    .collect();
                Box::new(errors.into_iter())
            }
        }

        fn factory<'a>(
            _: &'a Map<String, Value>,
            _: &'a Value,
            _: Location,
        ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
            Ok(Box::new(NonAsciiKeys))
        }

        let schema = json!({ "ascii-keys": true });
        let validator = crate::options()
            .with_keyword("ascii-keys", factory)
            .build(&schema)
            .unwrap();

        let instance = json!({ "å": 1, "ø": 2, "ok": 3 });
        let errors: Vec<_> = validator.iter_errors(&instance).collect();
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].to_string(), r#"Key "å" is not ASCII"#);
        assert_eq!(errors[1].to_string(), r#"Key "ø" is not ASCII"#);

        // `validate` yields the first error; `is_valid` short-circuits.
        assert!(!validator.is_valid(&instance));
        assert_eq!(
            validator.validate(&instance).unwrap_err().to_string(),
            r#"Key "å" is not ASCII"#
        );

        let valid = json!({ "ok": 1 });
        assert!(validator.is_valid(&valid));
        assert!(validator.validate(&valid).is_ok());
    }

    #[test]
    fn custom_keyword_iter_errors_default() {
        // A keyword that does NOT override `iter_errors`, exercising the default
        // that yields at most one error from `validate`.
        struct NonEmpty;
        impl<'i> Keyword<'i> for NonEmpty {
            fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
                if self.is_valid(instance) {
                    Ok(())
                } else {
                    Err(ValidationError::custom("must not be empty"))
                }
            }

            fn is_valid(&self, instance: &'i Value) -> bool {
                instance.as_object().is_none_or(|obj| !obj.is_empty())
            }
        }

        fn factory<'a>(
            _: &'a Map<String, Value>,
            _: &'a Value,
            _: Location,
        ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
            Ok(Box::new(NonEmpty))
        }

        let validator = crate::options()
            .with_keyword("non-empty", factory)
            .build(&json!({ "non-empty": true }))
            .unwrap();

        let empty = json!({});
        let errors: Vec<_> = validator.iter_errors(&empty).collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].to_string(), "must not be empty");

        let non_empty = json!({ "a": 1 });
        assert_eq!(validator.iter_errors(&non_empty).count(), 0);
    }

    #[test]
    fn custom_format_and_override_keyword() {
        // Check that a string has some number of digits followed by a dot followed by exactly 2 digits.
        fn currency_format_checker(s: &str) -> bool {
            static CURRENCY_RE: LazyLock<Regex> = LazyLock::new(|| {
                Regex::new("^(0|([1-9]+[0-9]*))(\\.[0-9]{2})$").expect("Invalid regex")
            });
            CURRENCY_RE.is_match(s).expect("Invalid regex")
        }
        // A custom keyword validator that overrides "minimum"
        // so that "minimum" may apply to "currency"-formatted strings as well.
        struct CustomMinimumValidator {
            limit: f64,
            with_currency_format: bool,
        }

        impl<'i> Keyword<'i> for CustomMinimumValidator {
            fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
                if self.is_valid(instance) {
                    Ok(())
                } else {
                    Err(ValidationError::custom(format!(
                        "value is less than the minimum of {}",
                        self.limit
                    )))
                }
            }

            fn is_valid(&self, instance: &'i Value) -> bool {
                match instance {
                    // Numeric comparison should happen just like original behavior
                    Value::Number(instance) => {
                        if let Some(item) = instance.as_u64() {
                            !NumCmp::num_lt(item, self.limit)
                        } else if let Some(item) = instance.as_i64() {
                            !NumCmp::num_lt(item, self.limit)
                        } else {
                            let item = instance.as_f64().expect("Always valid");
                            !NumCmp::num_lt(item, self.limit)
                        }
                    }
                    // String comparison should cast currency-formatted
                    Value::String(instance)
                        if self.with_currency_format && currency_format_checker(instance) =>
                    {
                        // all preconditions for minimum applying are met
                        let value = instance
                            .parse::<f64>()
                            .expect("format validated by regex checker");
                        !NumCmp::num_lt(value, self.limit)
                    }
                    // In all other cases, the "minimum" keyword should not apply
                    _ => true,
                }
            }
        }

        // Build a validator that overrides the standard `minimum` keyword
        fn custom_minimum_factory<'a>(
            parent: &'a Map<String, Value>,
            schema: &'a Value,
            _path: Location,
        ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
            let limit = if let Value::Number(limit) = schema {
                limit.as_f64().expect("Always valid")
            } else {
                return Err(ValidationError::schema("minimum must be a number"));
            };
            let with_currency_format = parent
                .get("format")
                .is_some_and(|format| format == "currency");
            Ok(Box::new(CustomMinimumValidator {
                limit,
                with_currency_format,
            }))
        }

        // Schema includes both the custom format and the overridden keyword
        let schema = json!({ "minimum": 2, "type": "string", "format": "currency" });
        let validator = crate::options()
            .with_format("currency", currency_format_checker)
            .with_keyword("minimum", custom_minimum_factory)
            .with_keyword("minimum-2", custom_minimum_factory)
            .should_validate_formats(true)
            .build(&schema)
            .expect("Invalid schema");

        // Control: verify schema validation rejects non-string types
        let instance = json!(15);
        assert!(validator.validate(&instance).is_err());
        assert!(!validator.is_valid(&instance));

        // Control: verify validator rejects ill-formatted strings
        let instance = json!("not a currency");
        assert!(validator.validate(&instance).is_err());
        assert!(!validator.is_valid(&instance));

        // Verify validator allows properly formatted strings that conform to custom keyword
        let instance = json!("3.00");
        assert!(validator.validate(&instance).is_ok());
        assert!(validator.is_valid(&instance));

        // Verify validator rejects properly formatted strings that do not conform to custom keyword
        let instance = json!("1.99");
        assert!(validator.validate(&instance).is_err());
        assert!(!validator.is_valid(&instance));

        // Define another schema that applies "minimum" to an integer to ensure original behavior
        let schema = json!({ "minimum": 2, "type": "integer" });
        let validator = crate::options()
            .with_format("currency", currency_format_checker)
            .with_keyword("minimum", custom_minimum_factory)
            .build(&schema)
            .expect("Invalid schema");

        // Verify schema allows integers greater than 2
        let instance = json!(3);
        assert!(validator.validate(&instance).is_ok());
        assert!(validator.is_valid(&instance));

        // Verify schema rejects integers less than 2
        let instance = json!(1);
        assert!(validator.validate(&instance).is_err());
        assert!(!validator.is_valid(&instance));

        // Invalid `minimum` value - meta-schema validation catches this first
        let schema = json!({ "minimum": "foo" });
        let error = crate::options()
            .with_keyword("minimum", custom_minimum_factory)
            .build(&schema)
            .expect_err("Should fail");
        // The meta-schema validates before our factory runs, so we get a type error
        assert_eq!(error.to_string(), "\"foo\" is not of type \"number\"");
    }

    // Messages shorter and longer than the buffer `evaluate` formats into first.
    #[test_case(&json!({"const": "x"}); "short")]
    #[test_case(&json!({"const": "x".repeat(113)}); "fills the buffer")]
    #[test_case(&json!({"const": "x".repeat(114)}); "one past the buffer")]
    #[test_case(&json!({"const": "x".repeat(300)}); "far past the buffer")]
    fn evaluate_message_matches_validate(schema: &Value) {
        let validator = crate::validator_for(schema).expect("Valid schema");
        let instance = json!("y");
        let expected = validator
            .validate(&instance)
            .expect_err("Should fail")
            .to_string();
        let evaluation = validator.evaluate(&instance);
        let messages: Vec<_> = evaluation
            .iter_errors()
            .map(|entry| entry.error.message())
            .collect();
        assert_eq!(messages, vec![expected.as_str()]);
    }

    #[test]
    fn custom_keyword_validation_error_paths() {
        struct AlwaysFailValidator;
        impl<'i> Keyword<'i> for AlwaysFailValidator {
            fn validate(&self, _instance: &'i Value) -> Result<(), ValidationError<'i>> {
                Err(ValidationError::custom("always fails"))
            }
            fn is_valid(&self, _instance: &'i Value) -> bool {
                false
            }
        }

        fn always_fail_factory<'a>(
            _: &'a Map<String, Value>,
            _: &'a Value,
            _: Location,
        ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
            Ok(Box::new(AlwaysFailValidator))
        }

        let schema = json!({
            "properties": {
                "name": { "alwaysFail": true }
            }
        });
        let validator = crate::options()
            .with_keyword("alwaysFail", always_fail_factory)
            .build(&schema)
            .expect("Valid schema");

        let instance = json!({"name": "test"});
        let error = validator.validate(&instance).expect_err("Should fail");
        assert_eq!(error.instance_path().as_str(), "/name");
        assert_eq!(error.schema_path().as_str(), "/properties/name/alwaysFail");
        assert_eq!(
            error.evaluation_path().as_str(),
            "/properties/name/alwaysFail"
        );
        assert_eq!(error.kind().keyword(), "alwaysFail");

        let evaluation = validator.evaluate(&instance);
        let descriptions: Vec<_> = evaluation
            .iter_errors()
            .map(|entry| (entry.error.keyword(), entry.error.message()))
            .collect();
        assert_eq!(descriptions, vec![("alwaysFail", "always fails")]);
    }

    #[test]
    fn custom_keyword_factory_error_schema_path() {
        fn failing_factory<'a>(
            _: &'a Map<String, Value>,
            _: &'a Value,
            _: Location,
        ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
            Err(ValidationError::schema("invalid schema value"))
        }

        let schema = json!({
            "properties": {
                "field": { "myKeyword": "bad-value" }
            }
        });
        let error = crate::options()
            .with_keyword("myKeyword", failing_factory)
            .build(&schema)
            .expect_err("Should fail");
        assert_eq!(error.to_string(), "invalid schema value");
        assert_eq!(error.schema_path().as_str(), "/properties/field/myKeyword");
    }

    #[test]
    fn custom_keyword_forwards_nested_error_kind() {
        struct Delegate(Validator);

        impl<'i> Keyword<'i> for Delegate {
            fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
                self.0.validate(instance)
            }
            fn is_valid(&self, instance: &'i Value) -> bool {
                self.0.is_valid(instance)
            }
        }

        fn delegate<'a>(
            _: &'a Map<String, Value>,
            value: &'a Value,
            _: Location,
        ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
            let validator = crate::validator_for(value).map_err(ValidationError::to_owned)?;
            Ok(Box::new(Delegate(validator)))
        }

        let validator = crate::options()
            .with_keyword("inner", delegate)
            .build(&json!({"properties": {"a": {"inner": {"minimum": 3}}}}))
            .expect("Valid schema");
        let instance = json!({"a": 1});
        let error = validator.validate(&instance).expect_err("Should fail");
        assert_eq!(
            (
                error.to_string(),
                error.kind().keyword(),
                error.instance_path().as_str(),
                error.schema_path().as_str(),
                error.evaluation_path().as_str(),
            ),
            (
                "1 is less than the minimum of 3".to_string(),
                "minimum",
                "/a",
                "/properties/a/inner",
                "/properties/a/inner",
            )
        );
    }
    struct AcceptAny;

    impl<'i> Keyword<'i> for AcceptAny {
        fn validate(&self, _: &'i Value) -> Result<(), ValidationError<'i>> {
            Ok(())
        }

        fn is_valid(&self, _: &'i Value) -> bool {
            true
        }
    }

    const ARRAY_SHAPE: &str =
        r#"{"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "number"}}"#;
    const LENGTH_RANGE: &str = r#"{"minLength": 2, "maxLength": 3}"#;
    const PROPERTIES_REQUIRED_2: &str =
        r#"{"properties": {"a": {"type": "integer"}}, "required": ["a", "b"]}"#;
    const PROPERTIES_CLOSED_REQUIRED_1: &str = r#"{"properties": {"a": {"type": "integer"}}, "additionalProperties": false, "required": ["a"]}"#;
    const PROPERTIES_ADDITIONAL_SCHEMA: &str =
        r#"{"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}"#;
    const PATTERN_PROPERTIES_CLOSED: &str =
        r#"{"patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": false}"#;

    #[test_case(ARRAY_SHAPE, "type", &json!("abc"), true; "array shape: custom type replaces the type check")]
    #[test_case(ARRAY_SHAPE, "minItems", &json!([1]), true; "array shape: custom minItems replaces the lower bound")]
    #[test_case(ARRAY_SHAPE, "maxItems", &json!([1, 2, 3, 4]), true; "array shape: custom maxItems replaces the upper bound")]
    #[test_case(ARRAY_SHAPE, "items", &json!(["a", "b"]), true; "array shape: custom items replaces the element check")]
    #[test_case(ARRAY_SHAPE, "items", &json!("abc"), false; "array shape: custom items keeps type")]
    #[test_case(ARRAY_SHAPE, "items", &json!([1]), false; "array shape: custom items keeps minItems")]
    #[test_case(ARRAY_SHAPE, "items", &json!([1, 2, 3, 4]), false; "array shape: custom items keeps maxItems")]
    #[test_case(LENGTH_RANGE, "minLength", &json!("a"), true; "length range: custom minLength replaces the lower bound")]
    #[test_case(LENGTH_RANGE, "minLength", &json!("abcd"), false; "length range: custom minLength keeps maxLength")]
    #[test_case(LENGTH_RANGE, "maxLength", &json!("abcd"), true; "length range: custom maxLength replaces the upper bound")]
    #[test_case(LENGTH_RANGE, "maxLength", &json!("a"), false; "length range: custom maxLength keeps minLength")]
    #[test_case(PROPERTIES_REQUIRED_2, "required", &json!({}), true; "properties with required: custom required replaces the presence check")]
    #[test_case(PROPERTIES_REQUIRED_2, "required", &json!({"a": "x", "b": 1}), false; "properties with required: custom required keeps properties")]
    #[test_case(PROPERTIES_REQUIRED_2, "properties", &json!({"a": "x", "b": 1}), true; "properties with required: custom properties replaces the value check")]
    #[test_case(PROPERTIES_REQUIRED_2, "properties", &json!({}), false; "properties with required: custom properties keeps required")]
    #[test_case(PROPERTIES_CLOSED_REQUIRED_1, "required", &json!({}), true; "closed object: custom required replaces the presence check")]
    #[test_case(PROPERTIES_CLOSED_REQUIRED_1, "additionalProperties", &json!({"a": 1, "z": 2}), true; "closed object: custom additionalProperties accepts extra keys")]
    #[test_case(PROPERTIES_CLOSED_REQUIRED_1, "additionalProperties", &json!({}), false; "closed object: custom additionalProperties keeps required")]
    #[test_case(PROPERTIES_CLOSED_REQUIRED_1, "additionalProperties", &json!({"a": "x"}), false; "closed object: custom additionalProperties keeps properties")]
    #[test_case(PROPERTIES_ADDITIONAL_SCHEMA, "additionalProperties", &json!({"a": "x"}), false; "additionalProperties schema: custom additionalProperties keeps properties")]
    #[test_case(PATTERN_PROPERTIES_CLOSED, "additionalProperties", &json!({"zz": 1}), true; "closed patterns: custom additionalProperties accepts unmatched keys")]
    #[test_case(PATTERN_PROPERTIES_CLOSED, "additionalProperties", &json!({"ab": "x"}), false; "closed patterns: custom additionalProperties keeps patternProperties")]
    fn fused_validators_yield_to_custom_keywords(
        schema: &str,
        keyword: &str,
        instance: &Value,
        expected: bool,
    ) {
        let schema: Value = serde_json::from_str(schema).expect("Invalid JSON");
        let validator = crate::options()
            .with_keyword(keyword, |_, _, _| Ok(Box::new(AcceptAny)))
            .build(&schema)
            .expect("Invalid schema");
        assert_eq!(validator.is_valid(instance), expected);
        assert_eq!(validator.validate(instance).is_ok(), expected);
        assert_eq!(validator.iter_errors(instance).count() == 0, expected);
    }

    #[test]
    fn custom_additional_properties_does_not_duplicate_required() {
        let schema = json!({"properties": {"a": {"type": "integer"}}, "additionalProperties": false, "required": ["a", "b"]});
        let validator = crate::options()
            .with_keyword("additionalProperties", |_, _, _| Ok(Box::new(AcceptAny)))
            .build(&schema)
            .expect("Invalid schema");
        assert_eq!(validator.iter_errors(&json!({})).count(), 2);
    }

    #[test]
    fn test_validator_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Validator>();
    }

    #[test]
    fn test_validator_map_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ValidatorMap>();
    }

    #[test]
    fn test_validator_clone() {
        let schema = json!({"type": "string", "minLength": 3});
        let validator = crate::validator_for(&schema).expect("Valid schema");

        // Clone the validator
        let cloned = validator.clone();

        // Both validators should work independently
        assert!(validator.is_valid(&json!("hello")));
        assert!(!validator.is_valid(&json!("hi")));

        assert!(cloned.is_valid(&json!("hello")));
        assert!(!cloned.is_valid(&json!("hi")));

        // Verify they validate the same way
        assert_eq!(
            validator.is_valid(&json!("test")),
            cloned.is_valid(&json!("test"))
        );
    }

    #[test]
    fn ref_with_required_multiple_missing_clones_deferred_eval_path() {
        // Tests the Deferred branch of LazyEvaluationPath::clone()
        // When $ref is involved and multiple required properties are missing,
        // the eval_path is cloned for each error
        let schema = json!({
            "$defs": {
                "Person": {
                    "type": "object",
                    "required": ["name", "age", "email"]
                }
            },
            "$ref": "#/$defs/Person"
        });
        let validator = crate::validator_for(&schema).expect("Valid schema");
        let instance = json!({});

        let errors: Vec<_> = validator.iter_errors(&instance).collect();

        // Should have 3 errors for the 3 missing required properties
        assert_eq!(errors.len(), 3);

        // All errors should have evaluation paths that include the $ref traversal
        for error in &errors {
            assert_eq!(error.schema_path().as_str(), "/$defs/Person/required");
            assert_eq!(error.evaluation_path().as_str(), "/$ref/required");
        }
    }

    #[test]
    fn test_validator_map_get_existing() {
        let schema = json!({
            "$defs": {
                "User": {"type": "object", "required": ["name"]}
            }
        });
        let map = crate::validator_map_for(&schema).unwrap();
        let v = map.get("#/$defs/User").unwrap();
        assert!(v.is_valid(&json!({"name": "Alice"})));
        assert!(!v.is_valid(&json!({})));
    }

    #[test]
    fn test_validator_map_root_always_present() {
        let schema = json!({"type": "string"});
        let map = crate::validator_map_for(&schema).unwrap();
        assert!(map.get("#").unwrap().is_valid(&json!("hello")));
        assert!(!map.get("#").unwrap().is_valid(&json!(42)));
    }

    #[test]
    fn test_validator_map_get_missing_returns_none() {
        let schema = json!({"type": "object"});
        let map = crate::validator_map_for(&schema).unwrap();
        assert!(map.get("#/nonexistent").is_none());
    }

    #[test]
    fn test_validator_map_contains_key() {
        let schema = json!({"$defs": {"Foo": {"type": "string"}}});
        let map = crate::validator_map_for(&schema).unwrap();
        assert!(map.contains_key("#/$defs/Foo"));
        assert!(!map.contains_key("#/missing"));
    }

    #[test]
    fn test_validator_map_keys_includes_root_and_defs() {
        let schema = json!({
            "type": "object",
            "$defs": {"Foo": {"type": "string"}}
        });
        let map = crate::validator_map_for(&schema).unwrap();
        let keys: std::collections::HashSet<&str> = map.keys().collect();
        assert!(keys.contains("#"));
        assert!(keys.contains("#/$defs/Foo"));
    }

    #[test]
    fn test_validator_map_index() {
        let schema = json!({"$defs": {"Bar": {"type": "integer"}}});
        let map = crate::validator_map_for(&schema).unwrap();
        assert!(map["#/$defs/Bar"].is_valid(&json!(42)));
        assert!(!map["#/$defs/Bar"].is_valid(&json!("nope")));
    }

    #[test]
    #[should_panic(expected = "JSON pointer '#/nonexistent' not found in ValidatorMap")]
    fn test_validator_map_index_panics_on_missing() {
        let schema = json!({"type": "object"});
        let map = crate::validator_map_for(&schema).unwrap();
        let _ = &map["#/nonexistent"];
    }

    #[test]
    fn test_validator_map_via_options() {
        let schema = json!({"$defs": {"S": {"type": "string"}}});
        let map = crate::options().build_map(&schema).unwrap();
        assert!(map.get("#/$defs/S").unwrap().is_valid(&json!("hello")));
    }

    #[cfg(all(feature = "resolve-async", not(target_family = "wasm")))]
    #[tokio::test]
    async fn test_async_validator_map_for() {
        let schema = json!({"$defs": {"T": {"type": "string"}}});
        let map = crate::async_validator_map_for(&schema).await.unwrap();
        assert!(map["#/$defs/T"].is_valid(&json!("hello")));
        assert!(!map["#/$defs/T"].is_valid(&json!(42)));
    }

    #[cfg(all(feature = "resolve-async", not(target_family = "wasm")))]
    #[tokio::test]
    async fn test_async_build_map_via_options() {
        let schema = json!({"$defs": {"N": {"type": "integer"}}});
        let map = crate::async_options().build_map(&schema).await.unwrap();
        assert!(map["#/$defs/N"].is_valid(&json!(7)));
        assert!(!map["#/$defs/N"].is_valid(&json!("not an int")));
    }

    #[test]
    fn test_validator_map_len() {
        let schema = json!({
            "$defs": {
                "A": {"type": "string"},
                "B": {"type": "integer"}
            }
        });
        let map = crate::validator_map_for(&schema).unwrap();
        assert!(map.len() >= 3); // root + A + B
    }

    #[test]
    fn test_validator_map_is_empty_false() {
        let schema = json!({"type": "string"});
        let map = crate::validator_map_for(&schema).unwrap();
        assert!(!map.is_empty());
    }

    #[test]
    fn test_validator_map_nested_pointer() {
        let schema = json!({
            "properties": {
                "name": {"type": "string", "minLength": 2}
            }
        });
        let map = crate::validator_map_for(&schema).unwrap();
        assert!(map["#/properties/name"].is_valid(&json!("Al")));
        assert!(!map["#/properties/name"].is_valid(&json!("A")));
    }

    #[test]
    fn test_validator_map_with_registry() {
        let address_schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "zip": {"type": "string"}
            },
            "required": ["city"]
        });
        let registry = crate::Registry::new()
            .add("https://example.com/address.json", &address_schema)
            .expect("valid resource")
            .prepare()
            .expect("registry build failed");

        let schema = json!({
            "$defs": {
                "Address": {"$ref": "https://example.com/address.json"}
            }
        });
        let map = crate::options()
            .with_registry(&registry)
            .build_map(&schema)
            .unwrap();

        let v = map.get("#/$defs/Address").unwrap();
        assert!(v.is_valid(&json!({"city": "NYC", "zip": "10001"})));
        assert!(!v.is_valid(&json!({"zip": "10001"}))); // missing required "city"
    }

    #[test]
    fn test_validator_map_with_registry_multiple_refs() {
        let user_schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        });
        let role_schema = json!({
            "type": "string",
            "enum": ["admin", "user", "guest"]
        });
        let registry = crate::Registry::new()
            .add("https://example.com/user.json", &user_schema)
            .expect("valid resource")
            .add("https://example.com/role.json", &role_schema)
            .expect("valid resource")
            .prepare()
            .expect("registry build failed");

        let schema = json!({
            "$defs": {
                "User": {"$ref": "https://example.com/user.json"},
                "Role": {"$ref": "https://example.com/role.json"}
            }
        });
        let map = crate::options()
            .with_registry(&registry)
            .build_map(&schema)
            .unwrap();

        assert!(map["#/$defs/User"].is_valid(&json!({"name": "Alice"})));
        assert!(!map["#/$defs/User"].is_valid(&json!({})));
        assert!(map["#/$defs/Role"].is_valid(&json!("admin")));
        assert!(!map["#/$defs/Role"].is_valid(&json!("superuser")));
    }

    #[cfg(all(feature = "resolve-async", not(target_family = "wasm")))]
    #[tokio::test]
    async fn test_async_validator_map_with_registry() {
        let address_schema = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        });
        let registry = crate::Registry::new()
            .add("https://example.com/address.json", &address_schema)
            .expect("valid resource")
            .prepare()
            .expect("registry build failed");

        let schema = json!({
            "$defs": {
                "Address": {"$ref": "https://example.com/address.json"}
            }
        });
        let map = crate::async_options()
            .with_registry(&registry)
            .build_map(&schema)
            .await
            .unwrap();

        let v = map.get("#/$defs/Address").unwrap();
        assert!(v.is_valid(&json!({"city": "NYC"})));
        assert!(!v.is_valid(&json!({})));
    }

    #[cfg(all(feature = "resolve-async", not(target_family = "wasm")))]
    #[tokio::test]
    async fn test_async_validator_map_with_registry_multiple_refs() {
        let user_schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        });
        let role_schema = json!({
            "type": "string",
            "enum": ["admin", "user", "guest"]
        });
        let registry = crate::Registry::new()
            .add("https://example.com/user.json", &user_schema)
            .expect("valid resource")
            .add("https://example.com/role.json", &role_schema)
            .expect("valid resource")
            .prepare()
            .expect("registry build failed");

        let schema = json!({
            "$defs": {
                "User": {"$ref": "https://example.com/user.json"},
                "Role": {"$ref": "https://example.com/role.json"}
            }
        });
        let map = crate::async_options()
            .with_registry(&registry)
            .build_map(&schema)
            .await
            .unwrap();

        assert!(map["#/$defs/User"].is_valid(&json!({"name": "Alice"})));
        assert!(!map["#/$defs/User"].is_valid(&json!({})));
        assert!(map["#/$defs/Role"].is_valid(&json!("admin")));
        assert!(!map["#/$defs/Role"].is_valid(&json!("superuser")));
    }

    #[test_case(&json!({"minItems": 2}), &json!([1, 2]), &json!({"valid": true, "details": [
        {"valid": true, "evaluationPath": "", "schemaLocation": "", "instanceLocation": ""},
        {"valid": true, "evaluationPath": "/minItems", "schemaLocation": "/minItems", "instanceLocation": ""}
    ]}); "minItems valid")]
    #[test_case(&json!({"minItems": 2}), &json!([1]), &json!({"valid": false, "details": [
        {"valid": false, "evaluationPath": "", "schemaLocation": "", "instanceLocation": ""},
        {"valid": false, "evaluationPath": "/minItems", "schemaLocation": "/minItems", "instanceLocation": "",
         "errors": {"minItems": "[1] has less than 2 items"}}
    ]}); "minItems invalid")]
    #[test_case(&json!({"maxItems": 1}), &json!([1, 2]), &json!({"valid": false, "details": [
        {"valid": false, "evaluationPath": "", "schemaLocation": "", "instanceLocation": ""},
        {"valid": false, "evaluationPath": "/maxItems", "schemaLocation": "/maxItems", "instanceLocation": "",
         "errors": {"maxItems": "[1,2] has more than 1 item"}}
    ]}); "maxItems invalid")]
    #[test_case(&json!({"minLength": 2}), &json!("a"), &json!({"valid": false, "details": [
        {"valid": false, "evaluationPath": "", "schemaLocation": "", "instanceLocation": ""},
        {"valid": false, "evaluationPath": "/minLength", "schemaLocation": "/minLength", "instanceLocation": "",
         "errors": {"minLength": "\"a\" is shorter than 2 characters"}}
    ]}); "minLength invalid")]
    #[test_case(&json!({"maxLength": 1}), &json!("ab"), &json!({"valid": false, "details": [
        {"valid": false, "evaluationPath": "", "schemaLocation": "", "instanceLocation": ""},
        {"valid": false, "evaluationPath": "/maxLength", "schemaLocation": "/maxLength", "instanceLocation": "",
         "errors": {"maxLength": "\"ab\" is longer than 1 character"}}
    ]}); "maxLength invalid")]
    #[test_case(&json!({"minProperties": 1}), &json!({}), &json!({"valid": false, "details": [
        {"valid": false, "evaluationPath": "", "schemaLocation": "", "instanceLocation": ""},
        {"valid": false, "evaluationPath": "/minProperties", "schemaLocation": "/minProperties", "instanceLocation": "",
         "errors": {"minProperties": "{} has less than 1 property"}}
    ]}); "minProperties invalid")]
    #[test_case(&json!({"maxProperties": 0}), &json!({"a": 1}), &json!({"valid": false, "details": [
        {"valid": false, "evaluationPath": "", "schemaLocation": "", "instanceLocation": ""},
        {"valid": false, "evaluationPath": "/maxProperties", "schemaLocation": "/maxProperties", "instanceLocation": "",
         "errors": {"maxProperties": "{\"a\":1} has more than 0 properties"}}
    ]}); "maxProperties invalid")]
    fn size_keyword_output(schema: &Value, instance: &Value, expected: &Value) {
        let validator = crate::validator_for(schema).expect("Valid schema");
        let list = serde_json::to_value(validator.evaluate(instance).list()).expect("List output");
        assert_eq!(&list, expected);
    }
}
