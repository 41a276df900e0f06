import { BookIcon, LogoMark, QuoteIcon, SlidersIcon } from "./icons";

const POINTS = [
  { icon: BookIcon, title: "Grounded", text: "Answers come from the documents in your knowledge bases." },
  { icon: QuoteIcon, title: "Cited", text: "Every claim points to the passages it rests on." },
  { icon: SlidersIcon, title: "Tunable", text: "Retrieval depth and similarity threshold are set per chat." },
];

/** What an empty conversation shows. */
export function Welcome() {
  return (
    <div className="welcome">
      <span className="welcome__logo">
        <LogoMark width={28} height={28} />
      </span>
      <h2 className="welcome__title">Ask your documents</h2>
      <p className="welcome__lead">A chat that answers from your own knowledge, and shows its sources.</p>
      <ul className="welcome__points">
        {POINTS.map(({ icon: Icon, title, text }) => (
          <li key={title} className="welcome__point">
            <Icon width={18} height={18} />
            <div>
              <strong>{title}</strong>
              <span>{text}</span>
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}
