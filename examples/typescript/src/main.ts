// A Node.js service's use of memagent: upload a document to S3, ask one
// question with DocumentQA while following its progress query, review the
// document with two questions, and run a batch over a JSON Lines manifest.
//
// Configuration comes from the environment that `go run ./devstack`
// prints: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL_S3, AWS_REGION, MEMAGENT_BUCKET
// (and MEMAGENT_TASK_QUEUE). The optional argument is a UTF-8 text file to
// use instead of the generated one.

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename, extname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Client, Connection, WorkflowFailedError, type WorkflowHandle } from "@temporalio/client";

import {
  BATCH_QA,
  DOCUMENT_QA,
  PROGRESS_QUERY,
  REVIEW_DOCUMENT,
  TASK_QUEUE,
  type BatchItemResult,
  type BatchProgress,
  type BatchQAInput,
  type BatchResult,
  type DocumentQAInput,
  type DocumentQAResult,
  type ManifestItem,
  type Progress,
  type ReviewInput,
  type ReviewResult,
} from "./memagent.js";

interface Config {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  bucket: string;
  s3Endpoint?: string;
  region: string;
}

function loadConfig(env: NodeJS.ProcessEnv): Config {
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? "http://127.0.0.1:9000";
  return {
    temporalAddress: env.TEMPORAL_ADDRESS ?? "127.0.0.1:7233",
    namespace: env.TEMPORAL_NAMESPACE ?? "default",
    taskQueue: env.MEMAGENT_TASK_QUEUE ?? TASK_QUEUE,
    bucket: env.MEMAGENT_BUCKET ?? "memagent",
    // memagent's "aws" means AWS itself: the SDK's own endpoint.
    s3Endpoint: endpoint === "aws" ? undefined : endpoint,
    region: env.AWS_REGION ?? "us-east-1",
  };
}

/** A small document with two planted facts, to try things out. */
function demoDocument(): string {
  const lines: string[] = [];
  for (let i = 1; i <= 400; i++) {
    lines.push(`Note ${i} is about river boats and harvest weather.`);
    if (i === 150) lines.push("The vault combination is 4417-ORCHID.");
    if (i === 320) lines.push("Only the licensee may terminate the agreement.");
  }
  return lines.join("\n") + "\n";
}

class Store {
  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
  ) {}

  /** put uploads body, as it is, under key and returns its s3:// URI. */
  async put(key: string, body: string | Uint8Array, contentType: string): Promise<string> {
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }));
    return `s3://${this.bucket}/${key}`;
  }

  /** get reads an s3:// URI as text. */
  async get(uri: string): Promise<string> {
    const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
    if (!m) throw new Error(`not an s3://bucket/key URI: ${uri}`);
    const out = await this.s3.send(new GetObjectCommand({ Bucket: m[1], Key: m[2] }));
    if (!out.Body) throw new Error(`${uri}: empty body`);
    return out.Body.transformToString("utf-8");
  }
}

/**
 * follow prints the workflow's progress query whenever its answer changes,
 * until the workflow ends, and returns the result. A query can fail before
 * the first workflow task has run, or between runs of a continue-as-new
 * chain: it is simply asked again.
 */
async function follow<R, P>(handle: WorkflowHandle, show: (p: P) => string): Promise<R> {
  let done = false;
  const result = (handle.result() as Promise<R>).finally(() => {
    done = true;
  });
  let last = "";
  const began = Date.now();
  while (!done) {
    try {
      const line = show(await handle.query<P>(PROGRESS_QUERY));
      if (line !== last) {
        console.log(`  progress: ${line} (${((Date.now() - began) / 1000).toFixed(1)} s)`);
        last = line;
      }
    } catch {
      // not answerable yet
    }
    await Promise.race([sleep(250), result.catch(() => undefined)]);
  }
  return result;
}

function workflowId(kind: string): string {
  return `memagent-ts-${kind}-${Date.now().toString(36)}`;
}

async function main(): Promise<void> {
  const cfg = loadConfig(process.env);
  const s3 = new S3Client({ region: cfg.region, endpoint: cfg.s3Endpoint, forcePathStyle: true });
  const store = new Store(s3, cfg.bucket);
  const connection = await Connection.connect({ address: cfg.temporalAddress });
  try {
    const client = new Client({ connection, namespace: cfg.namespace });
    const options = { chunk_tokens: 500 };

    // 1. Upload the document's bytes as they are (a PDF or DOCX is not
    // text: decoding it as UTF-8 would corrupt it), under its SHA-256 and
    // its own name, so that a re-upload reuses the conversion and chunk
    // index memagent built for it.
    const path = process.argv[2];
    const body: Uint8Array = path ? await readFile(path) : Buffer.from(demoDocument(), "utf-8");
    const name = path ? basename(path) : "document.txt";
    const sha = createHash("sha256").update(body).digest("hex");
    const doc = await store.put(`examples/typescript/${sha}/${name}`, body, contentTypeOf(name));
    console.log(`uploaded ${doc} (${body.byteLength} bytes)`);

    // 2. DocumentQA, following its progress query.
    const qaInput: DocumentQAInput = {
      document: doc,
      question: "What is the vault combination?",
      gold_answers: ["4417-ORCHID"],
      options,
    };
    const qa = await client.workflow.start(DOCUMENT_QA, {
      taskQueue: cfg.taskQueue,
      workflowId: workflowId("qa"),
      args: [qaInput],
    });
    console.log(`DocumentQA ${qa.workflowId} started`);
    const answer = await follow<DocumentQAResult, Progress>(
      qa,
      (p) => `${p.stage} ${p.chunks_done}/${p.chunks_total} chunks, ${p.tokens_done}/${p.tokens_total} tokens`,
    );
    console.log(`DocumentQA answer: ${answer.answer} (found ${answer.answer_found}, exact match ${answer.scores?.exact_match}, ${answer.chunks} chunks, ${answer.usage.calls} model calls)`);
    console.log(`  result: ${answer.result_uri}`);

    // 3. ReviewDocument with two questions.
    const reviewInput: ReviewInput = {
      document: doc,
      questions: [
        { id: "vault", question: "What is the vault combination?", gold_answers: ["4417-ORCHID"] },
        { id: "termination", question: "Who may terminate the agreement?", gold_answers: ["the licensee"] },
      ],
      options,
    };
    const review = await client.workflow.start(REVIEW_DOCUMENT, {
      taskQueue: cfg.taskQueue,
      workflowId: workflowId("review"),
      args: [reviewInput],
    });
    console.log(`ReviewDocument ${review.workflowId} started`);
    const grid = await follow<ReviewResult, Progress>(review, (p) => `${p.stage} ${p.chunks_done}/${p.chunks_total} chunks`);
    for (const row of grid.rows) {
      const chunks = (row.evidence ?? []).map((e) => e.chunk).join(",") || "none";
      console.log(`review ${row.id}: ${row.answer} (${row.status}, exact match ${row.scores?.exact_match}, evidence chunks ${chunks})`);
    }
    console.log(`  grid: ${grid.csv_uri}`);

    // 4. BatchQA over a JSON Lines manifest.
    const items: ManifestItem[] = [
      { id: "vault", document: doc, question: "What is the vault combination?", gold_answers: ["4417-ORCHID"], labels: { kind: "needle" } },
      { id: "termination", document: doc, question: "Who may terminate the agreement?", gold_answers: ["the licensee"], labels: { kind: "clause" } },
    ];
    const manifestText = items.map((it) => JSON.stringify(it)).join("\n") + "\n";
    const manifest = await store.put(`examples/typescript/manifests/${workflowId("items")}.jsonl`, manifestText, "application/x-ndjson");
    const batchInput: BatchQAInput = { manifest, name: "typescript-example", concurrency: 2, options };
    const batch = await client.workflow.start(BATCH_QA, {
      taskQueue: cfg.taskQueue,
      workflowId: workflowId("batch"),
      args: [batchInput],
    });
    console.log(`BatchQA ${batch.workflowId} started over ${manifest}`);
    const report = await follow<BatchResult, BatchProgress>(batch, (p) => `${p.stage} ${p.done}/${p.items} items done, ${p.running} running, ${p.failed} failed`);
    console.log(`batch: ${report.items} items, ${report.succeeded} succeeded, ${report.failed} failed; exact match ${report.overall.exact_match} over ${report.overall.scored} scored`);
    const lines = (await store.get(`${report.report_prefix}results.jsonl`)).split("\n").filter((l) => l.trim() !== "");
    for (const line of lines) {
      const r = JSON.parse(line) as BatchItemResult;
      console.log(`batch ${r.id}: ${r.answer ?? ""} (${r.status}${r.error_type ? ", " + r.error_type : ""})`);
    }
    console.log(`  report: ${report.report_uri}`);
  } finally {
    await connection.close();
    s3.destroy();
  }
}

main().catch((err: unknown) => {
  if (err instanceof WorkflowFailedError) {
    const cause = err.cause as { message?: string; type?: string } | undefined;
    console.error(`workflow failed: ${cause?.type ?? ""} ${cause?.message ?? err.message}`);
  } else {
    console.error(err);
  }
  process.exit(1);
});

/** contentTypeOf names a document's media type from its file name. memagent
 * detects the format from the bytes; the type is for other readers of the
 * bucket. */
function contentTypeOf(name: string): string {
  switch (extname(name).toLowerCase()) {
    case ".pdf":
      return "application/pdf";
    case ".docx":
      return "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
    case ".html":
    case ".htm":
      return "text/html";
    default:
      return "text/plain; charset=utf-8";
  }
}
