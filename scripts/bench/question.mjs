// The question the answer-path bench asks, and how it checks the answer reached the model: one
// definition for AskBridge's runs (questions.mjs) and CloudCLI's (scripts/peer/answer-path.mjs).
import { resultFor } from "./mock-api.mjs";

/** The question both products are asked (scripts/peer asks CloudCLI the same). */
export const QUESTION = "Which database should we use?";
export const INPUT = {
  questions: [
    {
      question: QUESTION,
      header: "Database",
      multiSelect: false,
      options: [
        { label: "SQLite", description: "One file next to the app" },
        { label: "Postgres", description: "A database server" },
      ],
    },
  ],
};

/** The request that brings the model the answer to `toolUseId`; fails if the answer is not "Postgres". */
export async function answerReached(mock, toolUseId) {
  const request = await mock.request((r) => resultFor(r.body, toolUseId));
  const { content } = resultFor(request.body, toolUseId);
  const text = typeof content === "string" ? content : content.map((part) => part.text ?? "").join("\n");
  if (!text.includes('="Postgres"')) throw new Error(`the model was sent "${text}", not the answer "Postgres"`);
  return request;
}
