// Traces as the server sends them, for component and reducer tests.

import type { TraceFieldsFragment } from "../gql/graphql";

type Answer = NonNullable<TraceFieldsFragment["answer"]>;
type Guard = NonNullable<Answer["guard"]>;

/** A kept-everything trace of a scripted answer; `overrides` replace whole fields. */
export function trace(overrides: Partial<TraceFieldsFragment> = {}): TraceFieldsFragment {
  return {
    query: "How do I install it?",
    provider: "local",
    model: "SmolLM2-135M-Instruct",
    effectiveMode: "HYBRID",
    fusion: "CONVEX",
    embeddingSpace: "local/all-MiniLM-L6-v2-int8@384",
    noContext: false,
    degraded: [],
    settings: { enableRag: true, topK: 3, threshold: 0.25, includeCitations: true, mode: "HYBRID" },
    candidates: [],
    timings: [],
    tokens: null,
    budget: null,
    citations: null,
    answer: null,
    ranking: null,
    search: null,
    tools: null,
    ...overrides,
  };
}

/** The guard's verdict; PASS with nothing found unless overridden. */
export function guard(overrides: Partial<Guard> = {}): Guard {
  return { decision: "PASS", reasons: [], unsupportedSentences: 0, echoRemoved: 0, markersDropped: 0, stoppedEarly: false, ...overrides };
}

/** A generated answer the guard replaced with the extractive one because the model looped. */
export const loopedAnswer: Answer = {
  requestedMode: "GENERATIVE",
  mode: "GENERATIVE",
  reason: "the session asks for generated answers",
  sentences: 2,
  noAnswer: false,
  bar: null,
  considered: [],
  guard: guard({ decision: "FALLBACK", reasons: ["the text “the source of” repeats 4+ times in a row"], stoppedEarly: true }),
};

/** An AUTO session whose model is not a reliable writer: the answer was quoted. */
export const extractiveAnswer: Answer = {
  requestedMode: "AUTO",
  mode: "EXTRACTIVE",
  reason: "AUTO: local/SmolLM2-135M-Instruct is not a reliable writer (declared by its provider), so the answer is quoted from the sources",
  sentences: 2,
  noAnswer: false,
  bar: 0.4,
  considered: [
    { source: 1, text: "Run the installer.", score: 0.62, quoted: true, reason: "quoted" },
    { source: 2, text: "The installer is signed.", score: 0.31, quoted: false, reason: "below the bar: 0.31 < 0.40" },
  ],
  guard: null,
};
