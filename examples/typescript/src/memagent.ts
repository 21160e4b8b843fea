// The JSON contract of memagent's workflows, as docs/API.md describes it:
// workflow and query names, inputs, and the parts of results and progress
// this example reads. Field names are the wire names (snake_case).

export const TASK_QUEUE = "memagent";
export const DOCUMENT_QA = "memagent.DocumentQA";
export const REVIEW_DOCUMENT = "memagent.ReviewDocument";
export const BATCH_QA = "memagent.BatchQA";
export const PROGRESS_QUERY = "progress";

/** Per-request model options; every field is optional. */
export interface ModelOptions {
  model?: string;
  tokenizer?: string;
  chunk_tokens?: number;
  memory_max_tokens?: number;
  answer_max_tokens?: number;
  temperature?: number;
  top_p?: number;
  invalid_utf8?: "reject" | "replace";
}

export interface Usage {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface Scores {
  exact_match: boolean;
  substring_match: boolean;
  f1: number;
  recall?: number;
  best_gold?: string;
}

/** Input of memagent.DocumentQA. */
export interface DocumentQAInput {
  /** s3:// URI of UTF-8 text. */
  document: string;
  question: string;
  gold_answers?: string[];
  options?: ModelOptions;
  chunks_per_run?: number;
  heartbeat_timeout_seconds?: number;
  batch_id?: string;
}

/** What the progress query of memagent.DocumentQA answers. */
export interface Progress {
  stage: string;
  chunks_done: number;
  chunks_total: number;
  tokens_done: number;
  tokens_total: number;
  run: number;
  usage: Usage;
  memory: string;
  answer?: string;
}

/** Result of memagent.DocumentQA (the fields this example reads). */
export interface DocumentQAResult {
  workflow_id: string;
  run_id: string;
  document: string;
  question: string;
  answer: string;
  answer_found: boolean;
  chunks: number;
  tokens: number;
  scores?: Scores;
  usage: Usage;
  result_uri: string;
  trace_prefix: string;
}

/** One question of a review. */
export interface ReviewQuestion {
  /** Names the question's row and S3 keys: letters, digits, '.', '_', '-'. */
  id?: string;
  question: string;
  gold_answers?: string[];
}

/** Input of memagent.ReviewDocument. */
export interface ReviewInput {
  document: string;
  questions: ReviewQuestion[];
  options?: ModelOptions;
  parallelism?: number;
  max_chunks_ahead?: number;
}

/** One row of a review's grid. */
export interface ReviewRow {
  id: string;
  question: string;
  status: string;
  answer: string;
  answer_found: boolean;
  scores?: Scores;
  evidence: { chunk: number; start: number; end: number }[] | null;
  result_uri: string;
  error?: string;
  error_type?: string;
}

/** Result of memagent.ReviewDocument (the fields this example reads). */
export interface ReviewResult {
  workflow_id: string;
  document: string;
  chunks: number;
  rows: ReviewRow[];
  json_uri: string;
  csv_uri: string;
  html_uri: string;
}

/** One line of a JSON Lines batch manifest. */
export interface ManifestItem {
  id?: string;
  /** s3:// URI of UTF-8 text. */
  document: string;
  question: string;
  gold_answers?: string[];
  labels?: Record<string, string | number | boolean>;
}

/** Input of memagent.BatchQA. */
export interface BatchQAInput {
  /** s3:// URI of the manifest. */
  manifest: string;
  format?: "jsonl" | "memagent";
  name?: string;
  options?: ModelOptions;
  concurrency?: number;
}

/** What the progress query of memagent.BatchQA answers (in part). */
export interface BatchProgress {
  stage: string;
  items: number;
  running: number;
  done: number;
  answered: number;
  reused: number;
  failed: number;
}

/** Result of memagent.BatchQA (the fields this example reads). */
export interface BatchResult {
  workflow_id: string;
  name: string;
  items: number;
  succeeded: number;
  failed: number;
  overall: { answered: number; scored: number; exact_match: number; f1: number; usage: Usage };
  report_prefix: string;
  report_uri: string;
}

/** One line of a batch's results.jsonl (in part). */
export interface BatchItemResult {
  id: string;
  status: string;
  answer?: string;
  scores?: Scores;
  error?: string;
  error_type?: string;
}
